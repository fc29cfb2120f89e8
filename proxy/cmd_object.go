package proxy

import (
	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// OBJECT: what Redis says of how it holds a key, where pgcache has an
// answer. A collection's encoding is Redis 7.0's for its size (its
// store's Op answers); a string's is read from its value. Idle times and
// access frequencies are not kept per key (the memory store's eviction
// counts accesses in a sketch it does not expose): IDLETIME answers 0, and
// FREQ Redis's error for a server that does not count them. Each looks the
// key up first, and answers nil for a missing one, as Redis does.

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
	if objectFound(c, args) {
		c.writeInt(n)
	}
}

// objectFound reports whether the key of OBJECT <subcommand> key exists,
// having answered nil when it does not (or the error of the lookup).
func objectFound(c *conn, args [][]byte) bool {
	op, _ := coll.ParseType(append([][]byte{args[0]}, args[2:]...))
	if !c.doOne(op.Request().Args, op) {
		return false
	}
	if op.(*coll.TypeOf).Of() == backends.TypeNone {
		c.writeNull()
		return false
	}
	return true
}

// OBJECT FREQ key: nil for a missing key, as Redis looks the key up
// first; the error otherwise.
func cmdObjectFreq(c *conn, args [][]byte) {
	if objectFound(c, args) {
		c.writeError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. " +
			"Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
}
