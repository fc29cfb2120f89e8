package proxy

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Reply writers. They append to the connection's output buffer, which the
// connection loop flushes once per batch. RESP2 replies come from redcon's
// writer helpers; the few RESP3 types pgcache sends after HELLO 3 are
// written here.

func (c *conn) writeOK() { c.out = redcon.AppendOK(c.out) }

func (c *conn) writeSimple(s string) { c.out = redcon.AppendString(c.out, s) }

// writeError writes an error reply and counts it for INFO's errorstats.
func (c *conn) writeError(msg string) {
	c.countError(msg)
	c.out = redcon.AppendError(c.out, msg)
}

func (c *conn) writeInt(n int64) { c.out = redcon.AppendInt(c.out, n) }

func (c *conn) writeArray(n int) { c.out = redcon.AppendArray(c.out, n) }

// writeBulk writes a value. A large one first makes room for itself, which
// may end the connection (see room); then it is not written.
func (c *conn) writeBulk(b []byte) {
	if len(b) > flushAt && !c.room(len(b)) {
		return
	}
	c.out = redcon.AppendBulk(c.out, b)
}

func (c *conn) writeBulkString(s string) { c.out = redcon.AppendBulkString(c.out, s) }

// writeNull is a missing value: "$-1" in RESP2, "_" in RESP3.
func (c *conn) writeNull() {
	if c.proto == 3 {
		c.out = append(c.out, '_', '\r', '\n')
		return
	}
	c.out = redcon.AppendNull(c.out)
}

// writeNullArray is a missing array (an EXEC that WATCH aborted): "*-1"
// in RESP2, "_" in RESP3.
func (c *conn) writeNullArray() {
	if c.proto == 3 {
		c.out = append(c.out, '_', '\r', '\n')
		return
	}
	c.out = append(c.out, "*-1\r\n"...)
}

// writeMap starts a map of n pairs: "%n" in RESP3, an array of 2n in RESP2.
func (c *conn) writeMap(n int) {
	if c.proto == 3 {
		c.out = appendHeader(c.out, '%', n)
		return
	}
	c.out = redcon.AppendArray(c.out, 2*n)
}

// writeSet starts a set of n members: "~n" in RESP3, an array in RESP2.
func (c *conn) writeSet(n int) {
	if c.proto == 3 {
		c.out = appendHeader(c.out, '~', n)
		return
	}
	c.out = redcon.AppendArray(c.out, n)
}

// writeVerbatim writes text as RESP3's verbatim string ("=", format txt),
// as Redis answers INFO; a bulk string in RESP2.
func (c *conn) writeVerbatim(text string) {
	if c.proto == 3 {
		c.out = appendHeader(c.out, '=', len(text)+4)
		c.out = append(c.out, "txt:"...)
		c.out = append(c.out, text...)
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.out = redcon.AppendBulkString(c.out, text)
}

func appendHeader(b []byte, typ byte, n int) []byte {
	b = append(b, typ)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
