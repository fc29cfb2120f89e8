package proxy

import (
	"bytes"
	"io"

	"github.com/pgcache/pgcache/backends"
)

// Sizes of a connection's read buffer.
const (
	readBufSize = 16 << 10  // Redis's PROTO_IOBUF_LEN: what an idle connection holds
	minRead     = 4 << 10   // compact rather than read into less room than this
	maxIdleRead = 128 << 10 // a buffer grown past this is dropped once drained
	maxIdleArgs = 1024      // argument slices grown past this are dropped once drained
)

// reader parses RESP requests, multibulk and inline, out of a buffer it
// fills from the connection. It copies nothing: a request's arguments are
// slices of the buffer, valid until the next call to next or fill.
//
// Unlike redcon's reader it is bounded: every length a client sends is
// checked against the limits before it is used, the buffer grows only as far
// as the request being read needs (and no further than maxQuery), and a
// malformed request is an error that ends the connection rather than a
// panic or an unbounded wait.
//
// It follows Redis's processMultibulkBuffer and processInlineBuffer, down to
// their leniencies: the byte after a count line's '\r' and the two bytes
// after a bulk are skipped without being looked at, "*0" and negative
// counts are empty requests, and so are blank inline lines.
type reader struct {
	buf  []byte
	r, w int // buf[r:w] is unparsed; r is the start of the request being read

	// The multibulk request being read, kept across fills so a request that
	// arrives in pieces is scanned once. Offsets are relative to r.
	multi int    // arguments still to read; 0 between requests
	bulk  int    // length of the argument being read, -1 while its header is next
	pos   int    // next byte to parse
	spans []span // the arguments read so far

	args [][]byte // the last request's arguments, reused

	limits
	// unauth applies Redis's limits for a client that has not
	// authenticated yet (see count and bulkHeader).
	unauth bool
}

// span is an argument's place in the buffer, relative to reader.r.
type span struct{ lo, hi int }

// protoError is a malformed request. reply is what Redis answers before it
// closes the connection, empty when it closes without a word.
type protoError struct{ reply string }

func (e *protoError) Error() string {
	if e.reply == "" {
		return "request larger than the query buffer limit"
	}
	return e.reply
}

// The protocol errors, with Redis's texts.
var (
	errInvalidMultibulkLen = &protoError{"ERR Protocol error: invalid multibulk length"}
	errInvalidBulkLen      = &protoError{"ERR Protocol error: invalid bulk length"}
	errTooBigInline        = &protoError{"ERR Protocol error: too big inline request"}
	errTooBigMbulkCount    = &protoError{"ERR Protocol error: too big mbulk count string"}
	errTooBigBulkCount     = &protoError{"ERR Protocol error: too big bulk count string"}
	errUnbalancedQuotes    = &protoError{"ERR Protocol error: unbalanced quotes in request"}
	// errInlineNUL is pgcache's own: Redis waits for 64KiB instead (inline.go).
	errInlineNUL          = &protoError{"ERR Protocol error: NUL byte in inline request"}
	errQueryLimit         = &protoError{} // Redis closes such a client silently
	errUnauthMultibulkLen = &protoError{"ERR Protocol error: unauthenticated multibulk length"}
	errUnauthBulkLen      = &protoError{"ERR Protocol error: unauthenticated bulk length"}
)

// Redis's bounds on a client that must authenticate and has not: until it
// has, it cannot make the server hold more than a small request (Redis
// 6.2.6, CVE-2021-32675).
const (
	maxUnauthMulti = 10
	maxUnauthBulk  = 16384
)

func errExpectedDollar(got byte) error {
	return &protoError{"ERR Protocol error: expected '$', got '" + string(rune(got)) + "'"}
}

// limits is what a reader enforces.
type limits struct {
	maxBulk   int64 // the longest argument
	maxInline int   // the longest inline request or count line
	maxMulti  int   // the most arguments
	maxQuery  int64 // the longest request
}

func newReader(l limits) *reader {
	return &reader{buf: make([]byte, readBufSize), bulk: -1, limits: l}
}

// fill reads once from src into the buffer, after makeRoom.
func (rd *reader) fill(src io.Reader) (int, error) {
	rd.makeRoom()
	n, err := src.Read(rd.buf[rd.w:])
	rd.w += n
	return n, err
}

// makeRoom readies the buffer for a read: it moves a partial request to
// the front when little room is left behind it, and grows a full buffer.
func (rd *reader) makeRoom() {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	}
	if len(rd.buf)-rd.w < minRead && rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		rd.grow()
	}
}

// grow enlarges a full buffer. It doubles it, but never past what the
// argument being read is known to need, so a large value costs about its
// own size: doubling only while data keeps arriving means a client that
// announces a large value and sends nothing costs nothing. The parser has
// already checked the request against maxQuery, and a line against
// maxInline, so the buffer cannot grow past those.
func (rd *reader) grow() {
	size := 2 * len(rd.buf)
	if need := rd.need(); need > len(rd.buf) && need < size {
		size = need
	}
	buf := make([]byte, size)
	rd.w = copy(buf, rd.buf[rd.r:rd.w])
	rd.r = 0
	rd.buf = buf
}

// need is how many bytes from r the request needs to finish the argument
// being read, or 0 when that is not known yet.
func (rd *reader) need() int {
	if rd.multi > 0 && rd.bulk >= 0 {
		return rd.pos + rd.bulk + 2 + minRead // room for the next header too
	}
	return 0
}

// shrink drops buffers a large request left behind, once they are drained,
// so an idle connection holds readBufSize bytes whatever it did before.
func (rd *reader) shrink() {
	if rd.r == rd.w && len(rd.buf) > maxIdleRead {
		rd.buf = make([]byte, readBufSize)
		rd.r, rd.w = 0, 0
	}
	if rd.multi == 0 && cap(rd.spans) > maxIdleArgs {
		rd.spans = nil
	}
	if cap(rd.args) > maxIdleArgs {
		rd.args = nil
	} else {
		clear(rd.args[:cap(rd.args)]) // let go of the old buffer
	}
}

// next parses the next complete request in the buffer. It returns its
// arguments (at least one), nil when the buffer holds no complete request,
// or a *protoError.
func (rd *reader) next() ([][]byte, error) {
	for {
		if rd.multi == 0 {
			if rd.r == rd.w {
				return nil, nil
			}
			if rd.buf[rd.r] != '*' {
				args, wait, err := rd.inline()
				if err != nil || wait {
					return nil, err
				}
				if args == nil {
					continue // a blank line: nothing to run
				}
				return args, nil
			}
			ok, err := rd.count()
			if !ok || err != nil {
				return nil, err
			}
			if rd.multi == 0 {
				continue // "*0" or a negative count: an empty request
			}
		}
		for rd.multi > 0 {
			if rd.bulk < 0 {
				ok, err := rd.bulkHeader()
				if !ok || err != nil {
					return nil, err
				}
			}
			if rd.r+rd.pos+rd.bulk+2 > rd.w {
				return nil, nil
			}
			rd.spans = append(rd.spans, span{rd.pos, rd.pos + rd.bulk})
			rd.pos += rd.bulk + 2 // the "\r\n" after a bulk is not checked, as Redis
			rd.bulk = -1
			rd.multi--
		}
		args := rd.args[:0]
		for _, s := range rd.spans {
			lo, hi := rd.r+s.lo, rd.r+s.hi
			args = append(args, rd.buf[lo:hi:hi]) // capped: appending never writes into the buffer
		}
		rd.args = args
		rd.spans = rd.spans[:0]
		rd.r += rd.pos
		rd.pos = 0
		return args, nil
	}
}

// line finds the '\r' ending the count line that starts at from (an
// absolute offset). ok is false while the line, or the byte after its '\r',
// has not arrived; tooBig reports a line past maxInline without a '\r'.
func (rd *reader) line(from int) (end int, ok, tooBig bool) {
	window := rd.buf[from:min(rd.w, from+rd.maxInline+1)]
	i := bytes.IndexByte(window, '\r')
	if i < 0 {
		return 0, false, rd.w-from > rd.maxInline
	}
	if from+i+2 > rd.w {
		return 0, false, false // the byte after '\r' is part of the line
	}
	return from + i, true, false
}

// count reads the "*N\r\n" line starting a multibulk request.
func (rd *reader) count() (bool, error) {
	end, ok, tooBig := rd.line(rd.r)
	if tooBig {
		return false, errTooBigMbulkCount
	}
	if !ok {
		return false, nil
	}
	n, ok := backends.ParseInt(rd.buf[rd.r+1 : end])
	if !ok || n > int64(rd.maxMulti) {
		return false, errInvalidMultibulkLen
	}
	if rd.unauth && n > maxUnauthMulti {
		return false, errUnauthMultibulkLen
	}
	if n <= 0 {
		rd.r = end + 2
		return true, nil
	}
	rd.multi = int(n)
	rd.bulk = -1
	rd.pos = end + 2 - rd.r
	rd.spans = rd.spans[:0]
	return true, nil
}

// bulkHeader reads the "$N\r\n" line before an argument.
func (rd *reader) bulkHeader() (bool, error) {
	start := rd.r + rd.pos
	end, ok, tooBig := rd.line(start)
	if tooBig {
		return false, errTooBigBulkCount
	}
	if !ok {
		return false, nil
	}
	if rd.buf[start] != '$' {
		return false, errExpectedDollar(rd.buf[start])
	}
	n, ok := backends.ParseInt(rd.buf[start+1 : end])
	if !ok || n < 0 || n > rd.maxBulk {
		return false, errInvalidBulkLen
	}
	if rd.unauth && n > maxUnauthBulk {
		return false, errUnauthBulkLen
	}
	pos := end + 2 - rd.r
	if int64(pos)+n+2 > rd.maxQuery {
		return false, errQueryLimit
	}
	rd.pos = pos
	rd.bulk = int(n)
	return true, nil
}
