package script

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Defaults.
const (
	// DefaultMemoryLimit bounds how much a running script may grow the
	// process's live heap (see the package doc).
	DefaultMemoryLimit = 256 << 20
	// DefaultVersion is the Redis version scripts see as redis.REDIS_VERSION.
	DefaultVersion = "7.2.0"
	// defaultPoolSize is how many idle Lua states the engine keeps.
	defaultPoolSize = 16
)

// LogLevel is a redis.log level; the numbers are Redis's.
type LogLevel int

// redis.LOG_DEBUG, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING.
const (
	LogDebug LogLevel = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Options configures an Engine. Zero fields take the defaults.
type Options struct {
	// BusyThreshold is busy-reply-threshold: a script running longer is
	// busy (Running) and may be killed. Zero or negative: never. The engine
	// has no default of its own: its caller passes the server's threshold
	// (pgcache: backends.DefaultBusyThreshold unless CONFIG SET changed it).
	BusyThreshold time.Duration
	// MemoryLimit is how many bytes the live heap may grow while a script
	// runs before the script is stopped. Default 256 MiB; negative means no
	// limit.
	MemoryLimit int64
	// Log receives redis.log lines and the engine's own warnings (a slow
	// script). Default: dropped.
	Log func(level LogLevel, msg string)
	// Version is redis.REDIS_VERSION. Default "7.2.0".
	Version string
	// PoolSize is how many idle Lua states are kept for reuse. Default 16.
	PoolSize int
}

// Engine runs Redis scripts and functions. It is safe for concurrent use:
// scripts on different connections run at the same time, each in its own
// Lua state; which of them may run together (locking by keys) is the
// caller's decision.
type Engine struct {
	busy     atomic.Int64 // busy threshold in ns; <= 0 never busy
	memLimit atomic.Int64
	log      atomic.Pointer[func(LogLevel, string)]
	version  string
	verNum   int

	pool chan *vm

	mu          sync.RWMutex
	scripts     map[string]*evalScript // sha1 -> compiled script
	scriptBytes int64                  // bodies' sizes, for INFO

	fmu     sync.RWMutex
	libs    map[string]*library // name -> library
	funcs   map[string]*function
	libsGen uint64 // bumped by every change of libs

	rand *rand48 // math.random's generator, shared by every Lua state

	rmu     sync.Mutex
	running map[*Run]struct{}
	wd      watchdog
}

// New builds an Engine.
func New(o Options) *Engine {
	e := &Engine{
		scripts: make(map[string]*evalScript),
		libs:    make(map[string]*library),
		funcs:   make(map[string]*function),
		running: make(map[*Run]struct{}),
		rand:    newRand48(),
		version: o.Version,
	}
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if e.version == "" {
		e.version = DefaultVersion
	}
	if o.PoolSize <= 0 {
		o.PoolSize = defaultPoolSize
	}
	e.verNum = versionNum(e.version)
	e.pool = make(chan *vm, o.PoolSize)
	e.SetBusyThreshold(o.BusyThreshold)
	e.SetMemoryLimit(o.MemoryLimit)
	e.SetLogger(o.Log)
	e.wd.init(e)
	return e
}

// SetBusyThreshold sets busy-reply-threshold; it applies to running
// scripts too. Zero or negative: scripts are never busy.
func (e *Engine) SetBusyThreshold(d time.Duration) { e.busy.Store(int64(d)) }

// BusyThreshold is the current busy-reply-threshold.
func (e *Engine) BusyThreshold() time.Duration { return time.Duration(e.busy.Load()) }

// SetMemoryLimit sets the memory limit in bytes; zero or negative: none.
func (e *Engine) SetMemoryLimit(n int64) { e.memLimit.Store(n) }

// SetLogger sets where redis.log writes; nil drops the lines.
func (e *Engine) SetLogger(f func(LogLevel, string)) {
	if f == nil {
		f = func(LogLevel, string) {}
	}
	e.log.Store(&f)
}

func (e *Engine) logf(level LogLevel, msg string) { (*e.log.Load())(level, msg) }

func versionNum(v string) int {
	n := 0
	parts := strings.SplitN(v, ".", 3)
	for i := 0; i < 3; i++ {
		x := 0
		if i < len(parts) {
			x, _ = strconv.Atoi(parts[i])
		}
		n = n<<8 | (x & 0xff)
	}
	return n
}

// getVM takes an idle Lua state or makes one.
func (e *Engine) getVM() *vm {
	select {
	case v := <-e.pool:
		return v
	default:
		return newVM(e)
	}
}

// putVM returns a Lua state to the pool, unless it is broken or the pool is full.
func (e *Engine) putVM(v *vm) {
	if v.broken {
		v.L.Close()
		return
	}
	v.L.SetTop(0)
	select {
	case e.pool <- v:
	default:
		v.L.Close()
	}
}

// Caller runs the commands a script calls. The proxy implements it: it
// looks the command up, refuses what scripts may not run (returning the
// Err* texts of this package as error Values: ErrUnknownCommand,
// ErrWrongArity, ErrNotAllowed, ErrWriteReadOnly when run.ReadOnly and the
// command writes, and its own text for a key the script did not declare),
// runs it, calls run.MarkWrite() after a write, and returns the reply,
// written in protocol run.Resp() (2, or 3 after redis.setresp(3)) and
// parsed with ParseReply. Whether the script used redis.call or
// redis.pcall is the engine's business: an error Value is raised as a Lua
// error by redis.call and returned as a table by redis.pcall.
//
// args belong to the Caller once passed. The engine is done with the
// returned Value before it calls Call again, so the Value may share the
// Caller's buffers. Call runs on the script's goroutine, one call at a
// time.
type Caller interface {
	Call(run *Run, args [][]byte) Value
}

// ContextCaller is a Caller whose client can go away: when its context
// ends (the connection closed or was killed), the run stops within a
// watchdog tick, written or not, since nobody is left to stop it or to
// read its reply.
type ContextCaller interface {
	Caller
	Context() context.Context
}

// errClientGone stops a run whose client went away.
const errClientGone = "ERR the client closed its connection while the script ran"

// CallerFunc adapts a function to Caller.
type CallerFunc func(run *Run, args [][]byte) Value

// Call calls f.
func (f CallerFunc) Call(run *Run, args [][]byte) Value { return f(run, args) }

// Run is one script or function in progress: what Running reports and what
// a Caller is told about the script it runs commands for. It is valid only
// until the run ends: the Lua state that ran it reuses it for its next run.
type Run struct {
	// Name is the script's SHA1 for EVAL, the function's name for FCALL.
	Name string
	// Function is true for FCALL and FCALL_RO.
	Function bool
	// Command is the command that started the run, lowercase ("evalsha").
	Command string
	// Keys are the keys the run declared (KEYS / the keys argument).
	Keys [][]byte
	// ReadOnly: writes must be refused with ErrWriteReadOnly (EVAL_RO,
	// EVALSHA_RO, FCALL_RO, a script or function flagged no-writes).
	ReadOnly bool
	// Flags are the script's shebang flags or the function's flags.
	Flags Flags
	// Start is when the run began.
	Start time.Time

	resp   int
	wrote  atomic.Bool
	stop   atomic.Pointer[string] // why the run was stopped, nil while it may run
	cancel context.CancelFunc     // the Lua state's: stops it at its next instruction
	client context.Context        // the Caller's, when it is a ContextCaller
	heap   uint64                 // live heap when the run began, for the memory limit
	warned bool                   // the slow-script warning was logged (watchdog only)
}

// MarkWrite tells the engine the run has written; from then on SCRIPT KILL
// and FUNCTION KILL refuse to stop it (UNKILLABLE).
func (r *Run) MarkWrite() { r.wrote.Store(true) }

// Wrote tells whether the run has written.
func (r *Run) Wrote() bool { return r.wrote.Load() }

// Resp is the protocol the script reads replies in: 2, or 3 after
// redis.setresp(3).
func (r *Run) Resp() int { return r.resp }

func (r *Run) stopReason() string {
	if p := r.stop.Load(); p != nil {
		return *p
	}
	return ""
}

// halt stops the run at its next Lua instruction with the given error.
// It must be called with e.rmu held and r in e.running: the Run and the
// context it cancels belong to the Lua state, which reuses them for its
// next run, so a halt that came after the run ended would stop another.
func (r *Run) halt(reason string) {
	if r.stop.CompareAndSwap(nil, &reason) {
		r.cancel()
	}
}

// RunInfo describes a running script, for the proxy's -BUSY decisions and
// FUNCTION STATS.
type RunInfo struct {
	Name     string
	Function bool
	Command  string
	Keys     [][]byte
	Start    time.Time
	Wrote    bool
	// Busy: running longer than the busy threshold; clients that need its
	// keys get ErrBusyEval / ErrBusyFunction, and SCRIPT KILL / FUNCTION
	// KILL may stop it.
	Busy bool
}

// Running lists the scripts and functions running now.
func (e *Engine) Running() []RunInfo {
	thr := e.BusyThreshold()
	now := time.Now()
	e.rmu.Lock()
	defer e.rmu.Unlock()
	out := make([]RunInfo, 0, len(e.running))
	for r := range e.running {
		out = append(out, RunInfo{
			Name: r.Name, Function: r.Function, Command: r.Command, Keys: r.Keys,
			Start: r.Start, Wrote: r.Wrote(),
			Busy: thr > 0 && now.Sub(r.Start) >= thr,
		})
	}
	return out
}

// Kill is SCRIPT KILL (function false) and FUNCTION KILL (function true):
// it stops the busy runs of that kind that have not written. Redis has one
// running script; here several may be busy at once, and all the killable
// ones are stopped. Runs not yet past the busy threshold are not touched:
// in Redis no client could send SCRIPT KILL while they ran.
func (e *Engine) Kill(function bool) Value {
	thr := e.BusyThreshold()
	now := time.Now()
	e.rmu.Lock()
	defer e.rmu.Unlock()
	var busy, wrote, otherKind int
	var victims []*Run
	for r := range e.running {
		if thr <= 0 || now.Sub(r.Start) < thr {
			continue
		}
		busy++
		switch {
		case r.Function != function:
			otherKind++
		case r.Wrote():
			wrote++
		default:
			victims = append(victims, r)
		}
	}
	switch {
	case busy == 0:
		return Error(errNotBusy)
	case len(victims) > 0:
		for _, r := range victims {
			r.halt(errKilled)
		}
		return Status("OK")
	case wrote > 0:
		return Error(errUnkillable)
	case function:
		return Error(ErrBusyEval)
	default:
		return Error(ErrBusyFunction)
	}
}

// begin registers r: from now on Running shows it and Kill and the
// watchdog may halt it.
func (e *Engine) begin(r *Run) {
	r.resp = 2
	r.heap = e.wd.startHeap()
	e.rmu.Lock()
	e.running[r] = struct{}{}
	e.rmu.Unlock()
	e.wd.wake()
}

// end unregisters r: once it returns nothing halts r, and its vm may reuse
// it.
func (e *Engine) end(r *Run) {
	e.rmu.Lock()
	delete(e.running, r)
	e.rmu.Unlock()
}

// execute calls fn (already on v's stack with its nargs arguments above it)
// under r (v's record, filled by v.newRun), and converts its result or its
// error to a reply.
func (e *Engine) execute(v *vm, r *Run, nargs int) Value {
	L := v.L
	r.cancel = v.cancel
	e.begin(r)
	v.run = r
	v.cjson.reset()
	L.SetContext(v.ctx)
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				v.broken = true
				err = &lua.ApiError{Type: lua.ApiErrorPanic, Object: lua.LString("ERR script panicked")}
			}
		}()
		return L.PCall(nargs, 1, v.handler)
	}()
	L.RemoveContext()
	v.run = nil
	e.end(r)
	if r.stopReason() != "" {
		// A killed state may be stopped anywhere; do not reuse it.
		v.broken = true
	}
	v.endCoroutines()
	if err != nil {
		return errorReply(L, err, r.Name)
	}
	ret := L.Get(-1)
	L.Pop(1)
	return fromLua(L, ret, r.resp, 0)
}

// errorReply is the reply to a run that failed: Redis's
// "<err> script: <name>, on <source>:<line>."
func errorReply(L *lua.LState, err error, name string) Value {
	aerr, ok := err.(*lua.ApiError)
	if !ok {
		return Error("ERR " + err.Error())
	}
	t, ok := aerr.Object.(*lua.LTable)
	if !ok {
		return Error("ERR Error running script " + name + ", " + truncate(lua.LVAsString(aerr.Object), 100))
	}
	var b bytes.Buffer
	msg, ok := t.RawGetString("err").(lua.LString)
	if !ok {
		msg = "ERR unknown error"
	}
	b.WriteString(string(msg))
	src, sok := t.RawGetString("source").(lua.LString)
	line := t.RawGetString("line")
	if sok && line != lua.LNil {
		b.WriteString(" script: ")
		b.WriteString(name)
		b.WriteString(", on ")
		b.WriteString(string(src))
		b.WriteByte(':')
		b.WriteString(lua.LVAsString(line))
		b.WriteByte('.')
	}
	return Value{Kind: KindError, Str: b.Bytes()}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
