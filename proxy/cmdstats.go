package proxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// INFO's commandstats and errorstats, counted on the dispatch path.
//
// Calls, failed calls and rejected calls are exact. Time is sampled: a
// pair of clock reads costs a noticeable part of a GET served from
// memory, so each connection times about one command in sixteen, picked by
// a golden-ratio step so a pipeline that repeats a pattern is not always
// timed at the same place, plus the first call of every
// command. INFO reports usec as the timed calls' mean times calls.
//
// The commands pgcache groups (pipelined GET, MGET, SET: see group.go)
// are not counted one atomic add per call: a connection counts a run of
// one command locally and adds it at the end of the run or the batch, so a
// pipeline of sixteen GETs costs one add. A sampled run's time is shared
// evenly by its commands.

// cmdStats are one command's counters on one Server: Server.cmdStats
// holds them by command number (command.num), so two servers in a process
// count apart and CONFIG RESETSTAT zeroes its own server's.
type cmdStats struct {
	calls spread       // times run (inside MULTI: when EXEC runs it)
	timed atomic.Int64 // of which timed
	// timedYet is false until a call was timed: read by every call,
	// written once, so it stays in every core's cache where timed would not.
	timedYet atomic.Bool
	nanos    atomic.Int64 // the timed calls' total time
	rejected atomic.Int64 // refused before running: arity, NOAUTH
	failed   atomic.Int64 // ran and answered an error
}

// spread is a count every connection adds to, a slot a connection by its
// id: adds from two cores to one cache line would cost each batch a line
// bouncing between them.
type spread struct {
	slots [8]struct {
		n atomic.Int64
		_ [56]byte
	}
}

func (s *spread) Add(id, n int64) { s.slots[id&7].n.Add(n) }

func (s *spread) Load() (n int64) {
	for i := range s.slots {
		n += s.slots[i].n.Load()
	}
	return n
}

func (s *spread) Store(n int64) {
	for i := range s.slots {
		s.slots[i].n.Store(0)
	}
	s.slots[0].n.Store(n)
}

// timedOnce records that a call was timed, writing timedYet only once.
func (st *cmdStats) timedOnce() {
	if !st.timedYet.Load() {
		st.timedYet.Store(true)
	}
}

func (st *cmdStats) reset() {
	st.calls.Store(0)
	st.timed.Store(0)
	st.timedYet.Store(false)
	st.nanos.Store(0)
	st.rejected.Store(0)
	st.failed.Store(0)
}

// sampleStep is 2^32 divided by the golden ratio: adding it to a uint32
// visits every sixteenth of the range about equally often, without a period.
const sampleStep = 0x9E3779B9

// tally is a connection's count of a run of one command not yet added to
// the command's counters.
type tally struct {
	cmd *command
	n   int64
}

// introspect is a connection's part in INFO, CLIENT LIST and CLIENT
// REPLY. Only the connection's goroutine touches it, but for seen, which
// other connections read.
type introspect struct {
	tally   tally
	tick    uint32   // advanced by sampleStep per command or run
	errs    int      // error replies written by writeError
	drains  int      // times drain moved c.out, which invalidates offsets into it
	lastCmd *command // the command running or last run (CLIENT LIST's cmd=)
	mute    uint8    // CLIENT REPLY: muteOff, muteSkip, muteSkipNext
	unmuted []byte   // replies a muted request sends all the same (writeUnmuted)
	born    int64    // connected at, unix ms by the server's clock
	gone    atomic.Bool
	pub     seen // what other connections read: see cmd_client.go
	shown   shown
}

// statsOf returns the server's counters of cmd.
func (c *conn) statsOf(cmd *command) *cmdStats { return &c.s.cmdStats[cmd.num] }

// sample says whether to time the run about to start.
func (c *conn) sample() bool {
	c.tick += sampleStep
	return c.tick>>28 == 0
}

// countCall adds one grouped call of cmd (see join).
func (c *conn) countCall(cmd *command) {
	c.lastCmd = cmd
	if c.tally.cmd == cmd {
		c.tally.n++
		return
	}
	c.flushTally()
	c.tally = tally{cmd: cmd, n: 1}
}

func (c *conn) flushTally() {
	if c.tally.n > 0 {
		c.statsOf(c.tally.cmd).calls.Add(c.id, c.tally.n)
		c.tally.n = 0
	}
}

// call runs a command that passed exec's checks, counting it.
func (c *conn) call(cmd *command, args [][]byte) {
	c.flushTally() // an INFO later in the batch sees the batch's GETs
	c.lastCmd = cmd
	mark, errs, drains := len(c.out), c.errs, c.drains
	timed := c.sample() || !c.statsOf(cmd).timedYet.Load()
	var start time.Time
	if timed {
		start = time.Now()
	}
	if c.track != nil {
		c.trackedCall(cmd, args) // CLIENT TRACKING's read hook
	} else {
		cmd.fn(c, args)
	}
	st := c.statsOf(cmd)
	if timed {
		st.nanos.Add(int64(time.Since(start)))
		st.timed.Add(1)
		st.timedOnce()
	}
	st.calls.Add(c.id, 1)
	c.lastCmd = cmd // EXEC's and scripts' inner commands set it too
	if c.drains == drains && len(c.out) > mark && c.out[mark] == '-' {
		st.failed.Add(1)
		if c.errs == errs { // written without writeError: a script's error reply
			c.s.errStats.add(errorCode(c.out[mark+1:]))
		}
	}
}

// groupDone counts what a grouped run's end found: its errors (one per
// failed command: counted against the run's command, GET for a run of GETs
// and MGETs, each command's own in a run on a collection) and, when timed,
// its time, shared by its commands.
func (c *conn) groupDone(g *group, errs int, start time.Time, timed bool) {
	cmd := getCmd
	if g.op == groupSet {
		cmd = setCmd
	}
	if n := c.errs - errs; n > 0 && g.op != groupColl { // runColls counts each command's
		c.statsOf(cmd).failed.Add(int64(n))
	}
	if !timed {
		return
	}
	d := int64(time.Since(start))
	if g.op == groupColl {
		per := d / int64(len(g.cmds))
		for _, cmd := range g.cmds {
			st := c.statsOf(cmd)
			st.nanos.Add(per)
			st.timed.Add(1)
			st.timedOnce()
		}
		return
	}
	if g.op == groupSet {
		st := c.statsOf(setCmd)
		st.nanos.Add(d)
		st.timed.Add(int64(len(g.pairs)))
		st.timedOnce()
		return
	}
	gets := 0
	for _, n := range g.reads {
		if n == 0 {
			gets++
		}
	}
	per := d / int64(len(g.reads))
	if gets > 0 {
		st := c.statsOf(getCmd)
		st.nanos.Add(per * int64(gets))
		st.timed.Add(int64(gets))
		st.timedOnce()
	}
	if m := len(g.reads) - gets; m > 0 {
		st := c.statsOf(mgetCmd)
		st.nanos.Add(per * int64(m))
		st.timed.Add(int64(m))
		st.timedOnce()
	}
}

// maxErrorCodes bounds errorstats, as Redis does, against a client that
// makes up error codes (a script's error_reply).
const maxErrorCodes = 128

// errStats counts error replies by code: the first word of the message.
type errStats struct {
	mu    sync.Mutex
	codes map[string]int64
	order []string // codes in the order first seen
	total int64    // every error reply, counted or not
}

func (e *errStats) add(code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if n, ok := e.codes[code]; ok {
		e.codes[code] = n + 1
		return
	}
	if len(e.codes) >= maxErrorCodes {
		return
	}
	if e.codes == nil {
		e.codes = map[string]int64{}
	}
	e.codes[code] = 1
	e.order = append(e.order, code)
}

// snapshot returns the codes with their counts, and the total.
func (e *errStats) snapshot() (codes []string, counts []int64, total int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, code := range e.order {
		codes = append(codes, code)
		counts = append(counts, e.codes[code])
	}
	return codes, counts, e.total
}

func (e *errStats) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.codes, e.order, e.total = nil, nil, 0
}

// errorCode is Redis's error code of a reply's message (without the "-"):
// its first word when a space comes within 32 bytes, else ERR.
func errorCode[S string | []byte](msg S) string {
	for i := 0; i < len(msg) && i < 32; i++ {
		if msg[i] == ' ' {
			return string(msg[:i])
		}
	}
	return "ERR"
}

// countError is writeError's hook.
func (c *conn) countError(msg string) {
	c.errs++
	c.s.errStats.add(errorCode(msg))
}

// statBase is what CONFIG RESETSTAT zeroes. The counters themselves are
// Prometheus counters, which must not go back: INFO reports them minus
// the values they had at the last reset.
type statBase struct {
	connections, commands, rejected, hits, misses int64
	expired                                       int64
}

// resetStats is CONFIG RESETSTAT.
func (s *Server) resetStats() {
	for i := range s.cmdStats {
		s.cmdStats[i].reset()
	}
	s.errStats.reset()
	b := statBase{
		connections: s.stats.ConnectionsTotal.Load(),
		commands:    s.stats.CommandsProcessed.Load(),
		rejected:    s.stats.RejectedConnections.Load(),
		hits:        s.metrics.Hits.Load(),
		misses:      s.metrics.Misses.Load(),
		expired:     sumInfo(s.backendInfo(), "_expired_keys"),
	}
	s.base.Store(&b)
}

// allCommands lists every command and subcommand.
func allCommands() []*command {
	var all []*command
	for _, cmd := range commandList {
		all = append(all, cmd)
		all = append(all, cmd.subList...)
	}
	return all
}

// Server-wide clock and ops/sec sampling: a goroutine started by the first
// Serve ticks every clockTick, so connections read the time (CLIENT
// LIST's age and idle) from an atomic rather than the clock, and INFO's
// instantaneous_ops_per_sec is the mean of the last opsSamples ticks, as
// Redis samples it.
const (
	clockTick  = 100 * time.Millisecond
	opsSamples = 16
)

type opsMeter struct {
	mu      sync.Mutex
	samples [opsSamples]int64 // ops per second over one tick
	next    int
	lastN   int64
	lastAt  time.Time
}

func (m *opsMeter) sample(n int64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.lastAt.IsZero() {
		if d := now.Sub(m.lastAt); d > 0 {
			m.samples[m.next] = (n - m.lastN) * int64(time.Second) / int64(d)
			m.next = (m.next + 1) % opsSamples
		}
	}
	m.lastN, m.lastAt = n, now
}

func (m *opsMeter) perSecond() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum int64
	for _, v := range m.samples {
		sum += v
	}
	return sum / opsSamples
}

// runClock ticks until the server's context ends.
func (s *Server) runClock() {
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.clock.Store(now.UnixMilli())
			s.ops.sample(s.stats.CommandsProcessed.Load(), now)
		}
	}
}
