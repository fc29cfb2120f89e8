package proxy

import (
	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// OBJECT: what Redis says of how it holds a key, where pgcache has an
// answer. A collection's encoding is Redis 7.0's for its size (its
// store's Op answers); a string's is read from its value. Idle times and
// access frequencies are not tracked: IDLETIME answers 0, FREQ Redis's
// answer when no LFU policy is set, which is pgcache's case.

// OBJECT ENCODING key
func cmdObjectEncoding(c *conn, args [][]byte) {
	op, _ := coll.ParseObjectEncoding(args)
	enc := op.(*coll.Inspect)
	if !c.doOne(args, op) {
		return
	}
	if enc.Passed.Reply.Kind != backends.ReplyNone { // the server's own answer
		c.writeOp(op)
		return
	}
	switch enc.Type {
	case backends.TypeNone:
		c.writeNull()
	case backends.TypeString:
		c.withString(args[2], func(v []byte) { c.writeBulkString(coll.StringEncoding(v)) })
	default:
		c.writeOp(op)
	}
}

// OBJECT IDLETIME key, OBJECT REFCOUNT key: 0 and 1 for a key that
// exists.
func cmdObjectIdleTime(c *conn, args [][]byte) { objectExists(c, args, 0) }
func cmdObjectRefCount(c *conn, args [][]byte) { objectExists(c, args, 1) }

func objectExists(c *conn, args [][]byte, n int64) {
	op, _ := coll.ParseType(append([][]byte{args[0]}, args[2:]...))
	if !c.doOne(op.Request().Args, op) {
		return
	}
	if op.(*coll.TypeOf).Of() == backends.TypeNone {
		c.writeNull()
		return
	}
	c.writeInt(n)
}

// OBJECT FREQ key
func cmdObjectFreq(c *conn, _ [][]byte) {
	c.writeError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. " +
		"Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

// OBJECT HELP
func cmdObjectHelp(c *conn, _ [][]byte) {
	writeHelp(c, "OBJECT", []string{
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
	})
}
