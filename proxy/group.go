package proxy

import (
	"cmp"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/route"
)

// Pipelined runs of reads (GET, and MGET whose keys share a route), of
// plain SETs on one route, or of commands on the collection of one key
// whose replies the requests bound (LPUSH, SADD, HGET, LPOP without a
// count..., not LRANGE or a blocking command) are served by one backend
// call: a client that pipelines sixteen GETs to a Valkey or PostgreSQL
// route waits for one MGET round trip, not sixteen in a row, and an L1 in
// front of the route looks up the run's keys at once and reads all its
// misses in one query; sixteen LPUSHes to a queue take its lock and look
// it up once (backends.Sequencer). Replies
// are still written one per command, in order, each as the command alone
// would have answered it, and nothing else is reordered: a run ends at the
// first command that is not part of it, which runs after the run's replies
// are written.
//
// When the grouped call fails, the run's commands are retried one at a
// time, so each gets the answer it would have had alone (a bad key fails
// only its own GET or MGET; a value over the route's limit only its own
// SET). Grouped SETs are MSet, which stores with no expiry: exactly a
// plain SET.

// maxGroup bounds a run, and so the values one grouped read holds at once.
const maxGroup = 64

type groupOp uint8

const (
	groupNone groupOp = iota
	groupGet          // GET key, MGET key [key …]
	groupSet          // SET key value, without options
	groupColl         // a command on the collection of one key, all on the same key
)

// group is the run being collected. Keys and values point into the read
// buffer, which stays put until the batch is over.
type group struct {
	op   groupOp
	r    *route.Route
	keys []string
	// reads is, per command of a groupGet run, how many of keys it named,
	// and 0 for a GET: its one key is answered as a value, not an array.
	reads []int
	pairs []backends.KV // groupSet
	vals  [][]byte      // groupGet's answer
	// groupColl: the requests' arguments, their commands, the Ops (each a
	// coll.Command) they parsed to, and what each answered.
	argv [][]byte
	cmds []*command
	ops  []backends.Op
	errs []error
	// spare are the last groupColl run's Ops, answered and released, and
	// spareCmds their commands: a request of the same command at the same
	// place of the next run is parsed into its Op (coll.Reparse).
	spare     []backends.Op
	spareCmds []*command
}

// getCmd, mgetCmd and setCmd are the commands that group, set by init.
var getCmd, mgetCmd, setCmd *command

func init() { getCmd, mgetCmd, setCmd = commands["get"], commands["mget"], commands["set"] }

// groupable returns the run cmd can join and the keys it names, or
// groupNone.
func groupable(cmd *command, args [][]byte) (groupOp, [][]byte) {
	switch {
	case cmd == getCmd && len(args) == 2:
		return groupGet, args[1:]
	case cmd == mgetCmd && len(args) >= 2 && len(args) <= maxGroup+1:
		return groupGet, args[1:]
	case cmd == setCmd && len(args) == 3:
		return groupSet, args[1:2]
	case cmd != nil && cmd.coll != nil && cmd.arityOK(len(args)) && cmd.coll.Small(args):
		return groupColl, args[1:2]
	}
	return groupNone, nil
}

// join adds a request to the run, ending the run before it when it cannot
// be part of it. It returns false, with the run ended, when the request
// must run on its own: it is not groupable, a key has no route, or an
// MGET's keys span routes.
func (c *conn) join(cmd *command, args [][]byte) bool {
	op, keys := groupable(cmd, args)
	if op == groupNone || c.mustAuth() || c.multi != nil || c.mute != 0 || c.subs.any() ||
		op != groupGet && c.s.notify.Load() != 0 || // a write's own handler sends its events
		op == groupColl && c.track != nil { // tracking's read hook is call's
		c.endGroup()
		return false
	}
	r, k := c.t.ForKey(bstr(keys[0]))
	if r == nil {
		c.endGroup()
		return false
	}
	g := &c.group
	if len(g.keys) > 0 && (g.op != op || g.r != r || len(g.keys)+len(keys) > maxGroup ||
		op == groupColl && g.keys[0] != k) {
		c.endGroup()
	}
	if op == groupColl {
		return c.joinColl(cmd, args, r, k)
	}
	base := len(g.keys)
	g.keys = append(g.keys, k)
	for _, key := range keys[1:] {
		rk, k := c.t.ForKey(bstr(key))
		if rk != r {
			clear(g.keys[base:])
			g.keys = g.keys[:base]
			c.endGroup()
			return false
		}
		g.keys = append(g.keys, k)
	}
	g.op, g.r = op, r
	switch {
	case op == groupSet:
		g.pairs = append(g.pairs, backends.KV{Key: k, Val: args[2]})
	case cmd == mgetCmd:
		g.reads = append(g.reads, len(keys))
	default:
		g.reads = append(g.reads, 0)
	}
	c.countCall(cmd)
	if op == groupGet && c.tracksRead() {
		c.s.tracking.Read(c.track, c.t, keys, c.caching) // Served once the run has ended
	}
	return true
}

// endGroup runs the collected run and writes its replies.
func (c *conn) endGroup() {
	g := &c.group
	if len(g.keys) == 0 {
		return
	}
	errs := c.errs
	var start time.Time
	first := getCmd
	switch g.op {
	case groupSet:
		first = setCmd
	case groupColl:
		first = g.cmds[0]
	}
	timed := c.sample() || !c.statsOf(first).timedYet.Load() // a command's first run is timed
	if timed {
		start = time.Now()
	}
	switch {
	case g.op == groupGet && len(g.reads) == 1 && g.reads[0] == 0:
		v, ok, err := g.r.Backend.Get(c.ctx, g.keys[0])
		c.writeValue(g.r, v, ok, err)
	case g.op == groupSet && len(g.keys) == 1:
		c.setOne(g.r, g.pairs[0])
	case g.op == groupGet:
		c.getMany(g)
	case g.op == groupColl:
		c.runColls(g)
	default:
		c.setMany(g)
	}
	if timed || c.errs != errs {
		c.groupDone(g, errs, start, timed)
	}
	if c.track != nil && g.op == groupGet {
		c.s.tracking.Served(c.track)
	}
	if g.op == groupColl {
		for _, op := range g.ops {
			coll.Release(op)
		}
		g.spare, g.ops = g.ops, g.spare
		g.spareCmds, g.cmds = g.cmds, g.spareCmds
	}
	clear(g.keys)
	clear(g.pairs)
	clear(g.vals)
	clear(g.argv)
	clear(g.ops)
	clear(g.errs)
	g.keys, g.reads, g.pairs, g.vals = g.keys[:0], g.reads[:0], g.pairs[:0], g.vals[:0]
	g.argv, g.cmds, g.ops, g.errs = g.argv[:0], g.cmds[:0], g.ops[:0], g.errs[:0] // cmds: the table's, never freed
	g.op, g.r = groupNone, nil
	c.settle()
}

func (c *conn) getMany(g *group) {
	vals, err := g.r.Backend.MGet(c.ctx, g.keys, g.vals[:0])
	g.vals = vals
	if err != nil && len(g.reads) == 1 {
		c.backendErr(g.r, err)
		return
	}
	keys := g.keys
	for _, n := range g.reads {
		if err != nil {
			c.readAlone(g, keys, n)
		} else {
			c.writeRead(vals, n)
			vals = vals[max(n, 1):]
		}
		keys = keys[max(n, 1):]
	}
}

// readAlone answers one command of a failed run by itself: n keys of an
// MGET, or 0 for a GET of keys[0].
func (c *conn) readAlone(g *group, keys []string, n int) {
	if n == 0 {
		v, ok, err := g.r.Backend.Get(c.ctx, keys[0])
		c.writeValue(g.r, v, ok, err)
		return
	}
	vals, err := g.r.Backend.MGet(c.ctx, keys[:n], g.vals[:0])
	g.vals = vals
	if err != nil {
		c.backendErr(g.r, err)
		return
	}
	c.writeRead(vals, n)
}

// writeRead answers one command of a read run from its values: a GET's
// (n 0) as a value, an MGET's n as an array.
func (c *conn) writeRead(vals [][]byte, n int) {
	if n == 0 {
		c.writeValue(nil, vals[0], vals[0] != nil, nil)
		return
	}
	c.writeArray(n)
	for _, v := range vals[:n] {
		if v == nil {
			c.writeNull()
		} else {
			c.writeBulk(v)
		}
	}
}

func (c *conn) setMany(g *group) {
	if err := g.r.Backend.MSet(c.ctx, g.pairs); err != nil {
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
	if _, err := r.Backend.Set(c.ctx, p.Key, p.Val, backends.SetOptions{}); err != nil {
		c.backendErr(r, err)
		return
	}
	c.writeOK()
}

// joinColl adds a command on the collection at key k of route r to the
// run, which holds commands on k alone. A request its parser refuses runs
// on its own, and answers the parser's error.
func (c *conn) joinColl(cmd *command, args [][]byte, r *route.Route, k string) bool {
	// The reader reuses args for the next request; the bytes they point to
	// stay until the batch is over. An array that grows leaves the Ops
	// already parsed their old one.
	g := &c.group
	at := len(g.argv)
	g.argv = append(g.argv, args...)
	op, err := g.parse(cmd, g.argv[at:len(g.argv):len(g.argv)])
	if err != nil {
		clear(g.argv[at:])
		g.argv = g.argv[:at]
		c.endGroup()
		return false
	}
	op.Request().RESP = c.proto
	g.op, g.r = groupColl, r
	g.keys = append(g.keys, k)
	g.cmds = append(g.cmds, cmd)
	g.ops = append(g.ops, op)
	g.errs = append(g.errs, nil)
	c.countCall(cmd)
	return true
}

// parse parses a request of a groupColl run into the Op that its
// command had at the same place of the last run, or into a new one.
func (g *group) parse(cmd *command, args [][]byte) (coll.Command, error) {
	if i := len(g.ops); i < len(g.spare) && g.spareCmds[i] == cmd {
		if ok, err := coll.Reparse(g.spare[i], args); ok {
			return g.spare[i].(coll.Command), err
		}
	}
	return cmd.coll.Parse(args)
}

// runColls runs a run of commands on one collection and answers each,
// its error counted against its own command.
func (c *conn) runColls(g *group) {
	var err error
	if len(g.ops) == 1 {
		g.errs[0] = g.r.Backend.Do(c.ctx, g.keys[:1], g.ops[0])
	} else {
		sq, _ := backends.As[backends.Sequencer](g.r.Backend) // a route's wrapper is one
		err = sq.DoSeq(c.ctx, g.keys[0], g.ops, g.errs)
	}
	for i, op := range g.ops {
		if err := cmp.Or(err, g.errs[i]); err != nil {
			c.statsOf(g.cmds[i]).failed.Add(1)
			c.backendErr(g.r, err)
			continue
		}
		c.writeOp(op.(coll.Command))
	}
}
