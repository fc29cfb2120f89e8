package script

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Flags are a script's shebang flags or a function's flags.
type Flags uint8

// The flags Redis 7 knows. pgcache has no replicas, no maxmemory for
// scripts and no cluster: allow-oom, allow-stale, no-cluster and
// allow-cross-slot-keys are accepted and kept (FUNCTION LIST shows them),
// and only no-writes changes how a run behaves.
const (
	FlagNoWrites Flags = 1 << iota
	FlagAllowOOM
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
	// FlagShebang: an EVAL script with a "#!lua" line. Without it a script
	// runs in Redis's compatibility mode: EVAL_RO makes it read-only but
	// does not refuse it.
	FlagShebang
)

var flagNames = []struct {
	flag Flags
	name string
}{
	{FlagNoWrites, "no-writes"},
	{FlagAllowOOM, "allow-oom"},
	{FlagAllowStale, "allow-stale"},
	{FlagNoCluster, "no-cluster"},
	{FlagAllowCrossSlot, "allow-cross-slot-keys"},
}

// names lists the flags as FUNCTION LIST shows them.
func (f Flags) names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// evalScript is one script of the EVAL cache.
type evalScript struct {
	sha   string // its name: the body's SHA1, lowercase hex
	body  []byte
	proto *lua.FunctionProto // the body as a function of no arguments
	flags Flags
}

// compileEval checks a body's shebang and compiles it once. The body is
// wrapped as Redis wraps it ("function f_<sha>() <body>\nend") so that line
// numbers, varargs and "return" behave the same; the shebang line is blanked
// so that the body's lines keep their numbers.
func compileEval(body []byte) (*evalScript, string) {
	s := &evalScript{body: body}
	code := body
	if bytes.HasPrefix(body, []byte("#!")) {
		nl := bytes.IndexByte(body, '\n')
		if nl < 0 {
			return nil, errInvalidShebang
		}
		parts := strings.Split(string(body[:nl]), " ")
		if parts[0] != "#!lua" {
			return nil, "ERR Unexpected engine in script shebang: " + parts[0]
		}
		s.flags = FlagShebang
		for _, p := range parts[1:] {
			if p == "" {
				continue
			}
			list, ok := strings.CutPrefix(p, "flags=")
			if !ok {
				return nil, "ERR Unknown lua shebang option: " + p
			}
			if list == "" {
				continue
			}
			for _, name := range strings.Split(list, ",") {
				f, ok := flagByName(name)
				if !ok {
					return nil, "ERR Unexpected flag in script shebang: " + name
				}
				s.flags |= f
			}
		}
		code = body[nl:]
	}
	src := make([]byte, 0, len(code)+32)
	src = append(src, "return function() "...)
	src = append(src, code...)
	src = append(src, "\nend"...)
	proto, err := compile(src, "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + err.Error()
	}
	if len(proto.FunctionPrototypes) != 1 {
		return nil, "ERR Error compiling script (new function): user_script: body closes its function early"
	}
	s.proto = proto.FunctionPrototypes[0]
	return s, ""
}

func flagByName(name string) (Flags, bool) {
	for _, fn := range flagNames {
		if fn.name == name {
			return fn.flag, true
		}
	}
	return 0, false
}

// compile parses and compiles Lua source; name is the chunk's name in
// error positions ("user_script:1:").
func compile(src []byte, name string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, compileError(err, name)
	}
	return lua.Compile(chunk, name)
}

// compileError shortens gopher-lua's parse error ("<name> line:1(column:5)
// near 'x':   syntax error") to Lua's form ("<name>:1: syntax error near 'x'").
func compileError(err error, name string) error {
	if pe, ok := err.(*parse.Error); ok {
		msg := strings.TrimSpace(pe.Message)
		if pe.Token != "" {
			msg += " near '" + pe.Token + "'"
		}
		return compileErr(name + ":" + strconv.Itoa(pe.Pos.Line) + ": " + msg)
	}
	return err
}

type compileErr string

func (e compileErr) Error() string { return string(e) }

// loadScript returns the cached script of body, compiling and caching it
// the first time (EVAL and SCRIPT LOAD).
func (e *Engine) loadScript(body []byte) (string, *evalScript, string) {
	sha := sha1hex(body)
	e.mu.RLock()
	s := e.scripts[sha]
	e.mu.RUnlock()
	if s != nil {
		return sha, s, ""
	}
	s, msg := compileEval(clone(body))
	if msg != "" {
		return "", nil, msg
	}
	s.sha = sha
	e.mu.Lock()
	if old := e.scripts[sha]; old != nil {
		s = old
	} else {
		e.scripts[sha] = s
		e.scriptBytes += int64(len(s.body))
	}
	e.mu.Unlock()
	return sha, s, ""
}

// Keys returns the keys an EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL or
// FCALL_RO command declares (argv[0] is the command name), for the proxy
// to lock or route them before running it. A bad numkeys gives the error
// the command itself would give.
func Keys(argv [][]byte) ([][]byte, Value) {
	if len(argv) < 3 {
		return nil, Error(errArity(strings.ToLower(string(argv[0]))))
	}
	fcall := len(argv[0]) >= len("fcall") && strings.EqualFold(string(argv[0][:len("fcall")]), "fcall")
	n, err := strconv.ParseInt(string(argv[2]), 10, 64)
	switch {
	case err != nil && fcall:
		return nil, Error(errBadKeys)
	case err != nil:
		return nil, Error(errNotInteger)
	case n < 0:
		return nil, Error(errNegativeKeys)
	case n > int64(len(argv)-3):
		return nil, Error(errTooManyKeys)
	}
	return argv[3 : 3+n], Value{}
}

// The commands Eval runs, as Run.Command names them.
const (
	cmdEval      = "eval"
	cmdEvalRO    = "eval_ro"
	cmdEvalSHA   = "evalsha"
	cmdEvalSHARO = "evalsha_ro"
)

// evalCommand is the lowercase name of the command argv0 names, in any
// case, without allocating for the four Eval runs.
func evalCommand(argv0 []byte) string {
	for _, name := range []string{cmdEvalSHA, cmdEval, cmdEvalSHARO, cmdEvalRO} {
		if strings.EqualFold(string(argv0), name) {
			return name
		}
	}
	return strings.ToLower(string(argv0))
}

// Eval runs EVAL, EVALSHA, EVAL_RO or EVALSHA_RO; argv is the whole command
// (argv[0] is its name, any case). It returns the reply for the client.
func (e *Engine) Eval(c Caller, argv [][]byte) Value {
	name := evalCommand(argv[0])
	keys, bad := Keys(argv)
	if bad.Kind == KindError {
		return bad
	}
	args := argv[3+len(keys):]
	ro := strings.HasSuffix(name, "_ro")
	var s *evalScript
	if strings.HasPrefix(name, "evalsha") {
		if s = e.scriptBySHA(argv[1]); s == nil {
			return Error(errNoScript)
		}
	} else {
		var msg string
		_, s, msg = e.loadScript(argv[1])
		if msg != "" {
			return Error(msg)
		}
	}
	if ro && s.flags&FlagShebang != 0 && s.flags&FlagNoWrites == 0 {
		return Error(errWriteFlagRO)
	}
	start := time.Now() // before getVM, which may build a Lua state
	v := e.getVM()
	defer e.putVM(v)
	r := v.newRun()
	r.Name, r.Command, r.Keys, r.Flags, r.Start = s.sha, name, keys, s.flags, start
	r.ReadOnly = ro || (s.flags&FlagShebang != 0 && s.flags&FlagNoWrites != 0)
	v.setArgTables(keys, args)
	defer v.clearArgTables()
	v.L.Push(v.closure(s))
	return e.executeWith(v, r, c, 0)
}

// scriptBySHA is the cached script named sha, in any case, or nil. Clients
// send the lowercase name SCRIPT LOAD gave them: that is looked up without
// a copy.
func (e *Engine) scriptBySHA(sha []byte) *evalScript {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if s := e.scripts[string(sha)]; s != nil {
		return s
	}
	return e.scripts[strings.ToLower(string(sha))]
}

// executeWith runs with c as the run's Caller.
func (e *Engine) executeWith(v *vm, r *Run, c Caller, nargs int) Value {
	if cc, ok := c.(ContextCaller); ok {
		r.client = cc.Context()
	}
	v.caller = c
	out := e.execute(v, r, nargs)
	v.caller = nil
	return out
}

// luaStrings copies keys and args into one string, whose slices
// fillStrings gives the Lua tables: one allocation instead of one per item.
func luaStrings(keys, args [][]byte) string {
	n := 0
	for _, it := range keys {
		n += len(it)
	}
	for _, it := range args {
		n += len(it)
	}
	var b strings.Builder
	b.Grow(n)
	for _, it := range keys {
		b.Write(it)
	}
	for _, it := range args {
		b.Write(it)
	}
	return b.String()
}

// fillStrings sets t[1..len(items)] to the items, taken in turn from the
// front of all (see luaStrings), and returns the rest of all. A nil t is
// made.
func fillStrings(L *lua.LState, t *lua.LTable, items [][]byte, all string) (*lua.LTable, string) {
	if t == nil {
		t = L.CreateTable(len(items), 0)
	}
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(all[:len(it)]))
		all = all[len(it):]
	}
	return t, all
}

// Script runs SCRIPT LOAD, EXISTS, FLUSH, KILL and HELP; argv[0] is
// "SCRIPT".
func (e *Engine) Script(argv [][]byte) Value {
	if len(argv) < 2 {
		return Error(errArity("script"))
	}
	sub := strings.ToLower(string(argv[1]))
	switch sub {
	case "load":
		if len(argv) != 3 {
			return Error(errArity("script|load"))
		}
		sha, _, msg := e.loadScript(argv[2])
		if msg != "" {
			return Error(msg)
		}
		return BulkString(sha)
	case "exists":
		if len(argv) < 3 {
			return Error(errArity("script|exists"))
		}
		out := make([]Value, 0, len(argv)-2)
		e.mu.RLock()
		for _, a := range argv[2:] {
			_, ok := e.scripts[strings.ToLower(string(a))]
			out = append(out, Int(b2i(ok)))
		}
		e.mu.RUnlock()
		return Array(out...)
	case "flush":
		if len(argv) > 3 {
			return Error(errArity("script|flush"))
		}
		if len(argv) == 3 {
			if m := strings.ToLower(string(argv[2])); m != "sync" && m != "async" {
				return Error(errScriptFlush)
			}
		}
		e.mu.Lock()
		e.scripts = make(map[string]*evalScript)
		e.scriptBytes = 0
		e.mu.Unlock()
		return Status("OK")
	case "kill":
		if len(argv) != 2 {
			return Error(errArity("script|kill"))
		}
		return e.Kill(false)
	case "help":
		return helpReply("SCRIPT", scriptHelp)
	}
	return Error(errUnknownSubcommand(string(argv[1]), "SCRIPT"))
}

// CachedScripts is how many scripts EVAL and SCRIPT LOAD have cached and
// their bodies' total size, for INFO memory's number_of_cached_scripts and
// used_memory_scripts_eval.
func (e *Engine) CachedScripts() (n int, bytes int64) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.scripts), e.scriptBytes
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var scriptHelp = []string{
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
}

// helpReply is Redis's HELP answer: a header line, the lines, and HELP.
func helpReply(cmd string, lines []string) Value {
	out := []Value{Status(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")}
	for _, l := range lines {
		out = append(out, Status(l))
	}
	out = append(out, Status("HELP"), Status("    Prints this help."))
	return Array(out...)
}
