package proxy

import (
	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Pipelined runs of GET, or of plain SET, on one route are served by one
// backend call: a client that pipelines sixteen GETs to a Valkey or
// PostgreSQL route waits for one MGET round trip, not sixteen in a row.
// Replies are still written one per command, in order, and nothing else
// is reordered: a run ends at the first command that is not part of it,
// which runs after the run's replies are written.
//
// When the grouped call fails, the run's commands are retried one at a
// time, so each gets the answer it would have had alone (a bad key fails
// only its own GET; a value over the route's limit only its own SET).
// Grouped SETs are MSet, which stores with no expiry: exactly a plain SET.

// maxGroup bounds a run, and so the values one grouped read holds at once.
const maxGroup = 64

type groupOp uint8

const (
	groupNone groupOp = iota
	groupGet          // GET key
	groupSet          // SET key value, without options
)

// group is the run being collected. Keys and values point into the read
// buffer, which stays put until the batch is over.
type group struct {
	op    groupOp
	r     *route.Route
	keys  []string
	pairs []backends.KV // groupSet
	vals  [][]byte      // groupGet's answer
}

// getCmd and setCmd are the commands that group, set by init.
var getCmd, setCmd *command

func init() { getCmd, setCmd = commands["get"], commands["set"] }

// groupable returns the run cmd can join, or groupNone.
func groupable(cmd *command, args [][]byte) groupOp {
	switch {
	case cmd == getCmd && len(args) == 2:
		return groupGet
	case cmd == setCmd && len(args) == 3:
		return groupSet
	}
	return groupNone
}

// join adds a request to the run, ending the run before it when it cannot
// be part of it. It returns false, with the run ended, when the request
// must run on its own.
func (c *conn) join(cmd *command, args [][]byte) bool {
	op := groupable(cmd, args)
	var r *route.Route
	var k string
	if op != groupNone && !c.mustAuth() {
		r, k = c.t.ForKey(bstr(args[1]))
	}
	g := &c.group
	if r == nil || (len(g.keys) > 0 && (g.op != op || g.r != r || len(g.keys) == maxGroup)) {
		c.endGroup()
		if r == nil {
			return false
		}
	}
	g.op, g.r = op, r
	g.keys = append(g.keys, k)
	if op == groupSet {
		g.pairs = append(g.pairs, backends.KV{Key: k, Val: args[2]})
	}
	return true
}

// endGroup runs the collected run and writes its replies.
func (c *conn) endGroup() {
	g := &c.group
	switch {
	case len(g.keys) == 0:
		return
	case len(g.keys) == 1 && g.op == groupGet:
		v, ok, err := g.r.Backend.Get(c.s.ctx, g.keys[0])
		c.writeValue(g.r, v, ok, err)
	case len(g.keys) == 1:
		c.setOne(g.r, g.pairs[0])
	case g.op == groupGet:
		c.getMany(g)
	default:
		c.setMany(g)
	}
	clear(g.keys)
	clear(g.pairs)
	clear(g.vals)
	g.keys, g.pairs, g.vals = g.keys[:0], g.pairs[:0], g.vals[:0]
	g.op, g.r = groupNone, nil
}

func (c *conn) getMany(g *group) {
	vals, err := g.r.Backend.MGet(c.s.ctx, g.keys, g.vals[:0])
	g.vals = vals
	if err != nil {
		for _, k := range g.keys {
			v, ok, err := g.r.Backend.Get(c.s.ctx, k)
			c.writeValue(g.r, v, ok, err)
		}
		return
	}
	for _, v := range vals {
		c.writeValue(g.r, v, v != nil, nil)
	}
}

func (c *conn) setMany(g *group) {
	if err := g.r.Backend.MSet(c.s.ctx, g.pairs); err != nil {
		for _, p := range g.pairs {
			c.setOne(g.r, p)
		}
		return
	}
	for range g.pairs {
		c.writeOK()
	}
}

func (c *conn) setOne(r *route.Route, p backends.KV) {
	if _, err := r.Backend.Set(c.s.ctx, p.Key, p.Val, backends.SetOptions{}); err != nil {
		c.backendErr(r, err)
		return
	}
	c.writeOK()
}
