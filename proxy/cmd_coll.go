package proxy

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/route"
)

// Collections: hashes, sets, sorted sets and lists. Each command is a
// coll.Parser and a line of the command table; collCmd is every one's
// handler: parse (syntax errors first, as Redis checks them), route the
// keys (all on one route), run the Op on the route's backend, answer.

// collSpecs are the command table's lines of the commands on collections
// (coll.Commands).
func collSpecs() []spec {
	specs := make([]spec, len(coll.Commands))
	for i := range coll.Commands {
		c := &coll.Commands[i]
		specs[i] = spec{name: c.Name, fn: collCmd(c.Parse), kind: kindRead, arity: c.Arity,
			keys: keySpec{c.First, c.Last, c.Step}}
		if c.Write {
			specs[i].kind = kindWrite
		}
		switch {
		case c.Movable:
			specs[i].movable = collKeys(c.Parse)
		case specs[i].keys == oneKey && c.Small != nil:
			specs[i].coll = c
		}
	}
	return specs
}

// collKeys finds the keys of a request of a command whose keys a key spec
// cannot say (ZUNIONSTORE's numkeys): its parser does.
func collKeys(parse coll.Parser) func(args [][]byte) ([][]byte, string) {
	return func(args [][]byte) ([][]byte, string) {
		op, err := parse(args)
		if err != nil {
			return nil, err.Error()
		}
		at := op.Request().KeyAt
		keys := make([][]byte, len(at))
		for i, j := range at {
			keys[i] = args[j]
		}
		return keys, ""
	}
}

// collCmd is the handler of the collection command parse reads.
func collCmd(parse coll.Parser) handler {
	return func(c *conn, args [][]byte) { c.runColl(parse, args) }
}

func (c *conn) runColl(parse coll.Parser, args [][]byte) {
	op, err := parse(args)
	if err != nil {
		c.writeError(err.Error()) // a Refusal, in Redis's words
		return
	}
	switch {
	case !c.doOne(args, op):
	case c.blocks(op):
		c.block(args, op)
	default:
		c.collEvents(args, op)
		c.writeOp(op)
	}
}

// doOne runs op, made of args, on its route; false when it failed, and
// the error is answered.
func (c *conn) doOne(args [][]byte, op coll.Command) bool {
	req := op.Request()
	req.RESP = c.proto
	r, ok := c.routeKeys(args, req.KeyAt)
	if !ok {
		return false
	}
	defer c.clearScratch()
	if err := r.Backend.Do(c.ctx, c.keys, op); err != nil {
		c.backendErr(r, err)
		return false
	}
	return true
}

// routeKeys routes the keys of a request (args at keyAt) into c.keys, as
// their route stores them. Every key must be on one route; ok is false,
// answered, otherwise.
func (c *conn) routeKeys(args [][]byte, keyAt []int) (r *route.Route, ok bool) {
	c.keys = c.keys[:0]
	for _, at := range keyAt {
		rk, k := c.key(args[at])
		switch {
		case rk == nil:
			return nil, false
		case r != nil && rk != r:
			c.writeError(errCrossSlot)
			return nil, false
		}
		r = rk
		c.keys = append(c.keys, k)
	}
	return r, r != nil
}

// writeOp answers a collection command.
func (c *conn) writeOp(op coll.Command) { coll.Answer((*collWriter)(c), op) }

// collWriter is a connection as the Writer a coll.Command replies to.
type collWriter conn

func (w *collWriter) RESP3() bool      { return (*conn)(w).proto == 3 }
func (w *collWriter) Int(n int64)      { (*conn)(w).writeInt(n) }
func (w *collWriter) Bulk(b []byte)    { (*conn)(w).writeBulk(b) }
func (w *collWriter) Status(s string)  { (*conn)(w).writeSimple(s) }
func (w *collWriter) Null()            { (*conn)(w).writeNull() }
func (w *collWriter) NullArray()       { (*conn)(w).writeNullArray() }
func (w *collWriter) Array(n int)      { (*conn)(w).writeArray(n) }
func (w *collWriter) Map(n int)        { (*conn)(w).writeMap(n) }
func (w *collWriter) Set(n int)        { (*conn)(w).writeSet(n) }
func (w *collWriter) Error(msg string) { (*conn)(w).writeError(msg) }

// Bool is RESP3's boolean, RESP2's 1 or 0.
func (w *collWriter) Bool(b bool) {
	c := (*conn)(w)
	switch {
	case c.proto != 3:
		if b {
			c.writeInt(1)
		} else {
			c.writeInt(0)
		}
	case b:
		c.out = append(c.out, "#t\r\n"...)
	default:
		c.out = append(c.out, "#f\r\n"...)
	}
}

// Double writes a score as Redis 7.0 does: RESP3's double, or RESP2's
// bulk, both of %.17g (inf, -inf).
func (w *collWriter) Double(f float64) {
	c := (*conn)(w)
	if c.proto == 3 {
		c.out = append(c.out, ',')
		switch {
		case math.IsInf(f, 1):
			c.out = append(c.out, "inf"...)
		case math.IsInf(f, -1):
			c.out = append(c.out, "-inf"...)
		default:
			c.out = strconv.AppendFloat(c.out, f, 'g', 17, 64)
		}
		c.out = append(c.out, '\r', '\n')
		return
	}
	c.out = redcon.AppendBulkString(c.out, coll.FormatScore(f))
}

var _ coll.Writer = (*collWriter)(nil)
