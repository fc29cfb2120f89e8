package proxy

import (
	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// MEMORY USAGE and HELP: what a key takes, as pgcache counts it. A
// collection's size is the weight its store bounds it by (its members'
// bytes and a per-member overhead); a string's, its value's bytes. Both
// add the key and Redis's per-key overheads (its object header and dict
// entry), so the figures are of Redis's order, not its allocator's.

const (
	objectOverhead = 16 // Redis's robj
	entryOverhead  = 24 // Redis's dictEntry
)

// MEMORY USAGE key [SAMPLES count]
//
// SAMPLES is checked as Redis checks it, before the key is looked up; a
// size here is never sampled.
func cmdMemoryUsage(c *conn, args [][]byte) {
	for j := 3; j < len(args); j += 2 {
		if !is(args[j], "samples") || j+1 >= len(args) {
			c.writeError(errSyntax)
			return
		}
		n, ok := parseInt(args[j+1])
		switch {
		case !ok:
			c.writeError(errNotInteger)
			return
		case n < 0:
			c.writeError(errSyntax)
			return
		}
	}
	op, _ := coll.ParseMemoryUsage(args[:3])
	sized := op.(*coll.Inspect)
	if !c.doOne(args[:3], op) {
		return
	}
	keyBytes := int64(len(args[2])) + objectOverhead + entryOverhead
	switch {
	case op.Request().Reply.Kind != backends.ReplyNone: // the store's own answer (Valkey)
		c.writeOp(op)
	case sized.Type == backends.TypeNone:
		c.writeNull()
	case sized.Type == backends.TypeString:
		c.withString(args[2], func(v []byte) { c.writeInt(int64(len(v)) + keyBytes) })
	default:
		c.writeInt(sized.Bytes + keyBytes)
	}
}
