package proxy

import (
	"bytes"
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/script"
)

// Scripts: EVAL, EVALSHA, their _RO forms and FCALL run in package script's
// Lua engine as one atomic run of the route their declared keys are on,
// like EXEC; the commands a script calls run through scriptCaller. A
// script may touch only the keys it declares: they are what the run holds.

const errUndeclared = "ERR Script attempted to access a key it did not declare in KEYS (pgcache runs a script atomically over its declared keys)"

// newScripts is the server's scripting engine, busy past busy.
func newScripts(log *zap.Logger, busy time.Duration) *script.Engine {
	slog := log.Named("script")
	return script.New(script.Options{
		Version:       redisVersion,
		BusyThreshold: busy,
		Log: func(level script.LogLevel, msg string) {
			switch level {
			case script.LogWarning:
				slog.Warn(msg)
			case script.LogNotice:
				slog.Info(msg)
			default:
				slog.Debug(msg)
			}
		},
	})
}

// setBusyThreshold is busy-reply-threshold (lua-time-limit): how long a
// script runs before SCRIPT KILL may stop it and clients that need its
// keys are answered -BUSY, by the engine and by the stores that share the
// server's threshold.
func (s *Server) setBusyThreshold(d time.Duration) {
	s.scripts.SetBusyThreshold(d)
	s.busy.Store(d)
}

// EVAL script numkeys [key [key ...]] [arg [arg ...]]
// EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
// EVAL_RO, EVALSHA_RO: the same, refusing writes
func cmdEval(c *conn, args [][]byte) { c.runScript(args, (*script.Engine).Eval) }

// FCALL function numkeys [key [key ...]] [arg [arg ...]]
// FCALL_RO: the same, refusing writes
func cmdFCall(c *conn, args [][]byte) { c.runScript(args, (*script.Engine).FCall) }

// scriptRun is a connection's script run. A connection runs one script at
// a time (scripts cannot call EVAL), so it keeps one, reused run after run
// like its atomicRun: an EVALSHA allocates what the script and its
// commands do, not the frame around them.
type scriptRun struct {
	caller scriptCaller
	args   [][]byte
	run    func(*script.Engine, script.Caller, [][]byte) script.Value
	body   func() // c.scriptBody, bound once
	keys   []string
}

// runScript runs a script as one atomic run of its keys' route (by EVAL's
// key spec, which FCALL shares: scriptKeys).
func (c *conn) runScript(args [][]byte, run func(*script.Engine, script.Caller, [][]byte) script.Value) {
	r, stored, bad := c.routeOf(nil, c.scripting.keys[:0], commands["eval"], args)
	if bad != "" {
		c.writeError(bad)
		return
	}
	sr := &c.scripting
	if sr.body == nil {
		sr.caller.c, sr.body = c, c.scriptBody
	}
	c.holdOutput++ // the script's calls swap c.out: nothing may drain it
	defer func() { c.holdOutput-- }()
	sr.keys = stored // the buffer for the next run; this one borrows them
	sr.args, sr.run = args, run
	defer func() { sr.args, sr.run = nil, nil }()
	c.atomically(r, stored, false, sr.body)
}

// scriptBody is runScript's atomic run.
func (c *conn) scriptBody() {
	sr := &c.scripting
	v := sr.run(c.s.scripts, &sr.caller, sr.args)
	c.out = script.AppendReply(c.out, v, c.proto)
}

// SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP ...
func cmdScript(c *conn, args [][]byte) {
	c.out = script.AppendReply(c.out, c.s.scripts.Script(args), c.proto)
}

// FUNCTION LOAD|LIST|DELETE|FLUSH|DUMP|RESTORE|STATS|KILL|HELP ...
func cmdFunction(c *conn, args [][]byte) {
	c.out = script.AppendReply(c.out, c.s.scripts.Function(args), c.proto)
}

// scriptCaller runs the commands a script calls: each through its handler,
// into a buffer of its own, whose reply is parsed back for the script.
type scriptCaller struct {
	c   *conn
	buf []byte
}

// Context ends when the client's connection does: its script stops then.
func (sc *scriptCaller) Context() context.Context { return sc.c.ctx }

func (sc *scriptCaller) Call(run *script.Run, args [][]byte) script.Value {
	c := sc.c
	cmd := lookup(commands, args[0])
	switch {
	case cmd == nil && script.NoScript(args):
		// A Redis command pgcache does not have that Redis would refuse
		// anyway (BLPOP, CLUSTER RESET, ...): refused in Redis's words.
		return script.Error(script.ErrNotAllowed)
	case cmd == nil:
		return script.Error(script.ErrUnknownCommand)
	case cmd.noScript:
		return script.Error(script.ErrNotAllowed)
	}
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookup(cmd.subs, args[1]); sub != nil {
			cmd = sub
		}
	}
	switch {
	case !cmd.arityOK(len(args)):
		return script.Error(script.ErrWrongArity)
	case cmd.noScript || script.NoScript(args):
		return script.Error(script.ErrNotAllowed)
	case run.ReadOnly && cmd.kind == kindWrite:
		return script.Error(script.ErrWriteReadOnly)
	}
	var buf [4][]byte
	keys, bad := appendKeys(buf[:0], cmd, args)
	if bad != "" {
		return script.Error(bad)
	}
	for _, k := range keys {
		if !declared(run.Keys, k) {
			return script.Error(errUndeclared)
		}
	}
	out, off, proto := c.out, c.outOff, c.proto
	c.out, c.outOff, c.proto = sc.buf[:0], 0, run.Resp()
	c.call(cmd, args)
	reply := c.out
	sc.buf = reply[:0]
	c.out, c.outOff, c.proto = out, off, proto
	if cmd.kind == kindWrite {
		run.MarkWrite()
	}
	v, _, err := script.ParseReply(reply)
	if err != nil {
		return script.Error("ERR " + err.Error())
	}
	return v
}

func declared(keys [][]byte, k []byte) bool {
	for _, d := range keys {
		if bytes.Equal(d, k) {
			return true
		}
	}
	return false
}

// busyReply is -BUSY, naming the command that stops what runs.
func (c *conn) busyReply() string {
	for _, r := range c.s.scripts.Running() {
		if r.Busy && r.Function {
			return script.ErrBusyFunction
		}
	}
	return script.ErrBusyEval
}
