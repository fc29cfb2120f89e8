package script

import (
	"context"
	"path"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// loadTimeout bounds the run of a library's code at FUNCTION LOAD, as
// Redis's 500 ms load timeout does.
const loadTimeout = 500 * time.Millisecond

// library is one loaded FUNCTION library. Libraries live for the process.
type library struct {
	name  string
	code  []byte
	proto *lua.FunctionProto
	funcs []*function // in registration order
}

// function is one function of a library.
type function struct {
	name  string
	desc  *string
	flags Flags
	lib   *library
}

// libraryBuild collects what a library's code registers while it runs.
type libraryBuild struct {
	lib       *library
	funcs     []*function
	callbacks map[string]*lua.LFunction
}

// libLoaded is a library instantiated in one vm: its code was run there
// and these are the callbacks it registered.
type libLoaded struct {
	lib       *library
	callbacks map[string]*lua.LFunction
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseLibraryCode reads "#!lua name=<lib>" and compiles the code once.
func parseLibraryCode(code []byte) (*library, string) {
	if !strings.HasPrefix(string(code), "#!") {
		return nil, "ERR Missing library metadata"
	}
	nl := strings.IndexByte(string(code), '\n')
	if nl < 0 {
		return nil, "ERR Invalid library metadata"
	}
	parts := strings.Split(string(code[:nl]), " ")
	engine := strings.TrimPrefix(parts[0], "#!")
	if !strings.EqualFold(engine, "lua") {
		return nil, "ERR Engine '" + engine + "' not found"
	}
	lib := &library{code: code}
	named := false
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		name, ok := strings.CutPrefix(p, "name=")
		if !ok {
			return nil, "ERR Invalid metadata value given: " + p
		}
		if named {
			return nil, "ERR Invalid metadata value, name argument was given multiple times"
		}
		lib.name, named = name, true
	}
	if !named {
		return nil, "ERR Library name was not given"
	}
	if !validName(lib.name) {
		return nil, errLibName
	}
	// The shebang line stays as an empty line so lines keep their numbers.
	src := append([]byte{}, code[nl:]...)
	proto, err := compile(src, "user_function")
	if err != nil {
		return nil, "ERR Error compiling function: " + err.Error()
	}
	lib.proto = proto
	return lib, ""
}

// instantiate runs lib's code in v with the load globals and returns what
// it registered, or the error reply.
func (v *vm) instantiate(lib *library) (*libraryBuild, string) {
	L := v.L
	b := &libraryBuild{lib: lib, callbacks: make(map[string]*lua.LFunction)}
	v.loading = b
	v.envMeta.RawSetString("__index", v.loadGlobals)
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	L.SetContext(ctx)
	L.Push(L.NewFunctionFromProto(lib.proto))
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				v.broken = true
				err = &lua.ApiError{Type: lua.ApiErrorPanic, Object: lua.LString("script panicked")}
			}
		}()
		return L.PCall(0, 0, v.handler)
	}()
	L.RemoveContext()
	timedOut := ctx.Err() != nil
	cancel()
	v.envMeta.RawSetString("__index", v.runGlobals)
	v.loading = nil
	L.SetTop(0)
	if timedOut {
		v.broken = true
		return nil, "ERR FUNCTION LOAD timeout"
	}
	if err != nil {
		msg := "ERR unknown error"
		if aerr, ok := err.(*lua.ApiError); ok {
			if t, ok := aerr.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					msg = string(s)
				}
			} else {
				msg = lua.LVAsString(aerr.Object)
			}
		}
		return nil, "ERR Error registering functions: " + msg
	}
	if len(b.funcs) == 0 {
		return nil, "ERR No functions registered"
	}
	return b, ""
}

// registerFunction is redis.register_function, in its positional form
// (name, callback) and its table form {function_name=, callback=, flags=,
// description=}.
func (v *vm) registerFunction(L *lua.LState) int {
	fail := func(msg string) int {
		L.Error(internalError(L, msg), 0)
		return 0
	}
	b := v.loading
	if b == nil {
		return fail("redis.register_function can only be called on FUNCTION LOAD command")
	}
	var name string
	var cb *lua.LFunction
	var flags Flags
	var desc *string
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		eachPair(t, func(k, val lua.LValue) {
			if bad != "" {
				return
			}
			key, ok := k.(lua.LString)
			if !ok {
				bad = "named argument key given to redis.register_function is not a string"
				return
			}
			switch key {
			case "function_name":
				s, ok := luaString(val)
				if !ok {
					bad = "function_name argument given to redis.register_function must be a string"
				}
				name = s
			case "description":
				s, ok := luaString(val)
				if !ok {
					bad = "description argument given to redis.register_function must be a string"
				}
				desc = &s
			case "callback":
				f, ok := val.(*lua.LFunction)
				if !ok {
					bad = "callback argument given to redis.register_function must be a function"
				}
				cb = f
			case "flags":
				ft, ok := val.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				for i := 1; ; i++ {
					e := ft.RawGetInt(i)
					if e == lua.LNil {
						break
					}
					s, _ := e.(lua.LString)
					f, ok := flagByName(string(s))
					if !ok {
						bad = "unknown flag given"
						return
					}
					flags |= f
				}
			default:
				bad = "unknown argument given to redis.register_function"
			}
		})
		if bad != "" {
			return fail(bad)
		}
		if name == "" && cb != nil || name == "" && cb == nil {
			if name == "" {
				return fail("redis.register_function must get a function name argument")
			}
		}
		if cb == nil {
			return fail("redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := luaString(L.Get(1))
		if !ok {
			return fail("first argument to redis.register_function must be a string")
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			return fail("second argument to redis.register_function must be a function")
		}
		name, cb = s, f
	default:
		return fail("wrong number of arguments to redis.register_function")
	}
	if !validName(name) {
		return fail(errLibName[4:])
	}
	if _, dup := b.callbacks[name]; dup {
		return fail("Function already exists in the library")
	}
	b.callbacks[name] = cb
	b.funcs = append(b.funcs, &function{name: name, desc: desc, flags: flags, lib: b.lib})
	return 0
}

func luaString(lv lua.LValue) (string, bool) {
	switch x := lv.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		return x.String(), true
	}
	return "", false
}

// loadLibrary is FUNCTION LOAD [REPLACE] and one library of FUNCTION
// RESTORE: it checks, runs and installs code, and returns the library's
// name or the error reply.
func (e *Engine) loadLibrary(code []byte, replace bool) (string, string) {
	lib, msg := parseLibraryCode(clone(code))
	if msg != "" {
		return "", msg
	}
	e.fmu.RLock()
	_, exists := e.libs[lib.name]
	e.fmu.RUnlock()
	if exists && !replace {
		return "", "ERR Library '" + lib.name + "' already exists"
	}
	v := e.getVM()
	defer e.putVM(v)
	b, msg := v.instantiate(lib)
	if msg != "" {
		return "", msg
	}
	lib.funcs = b.funcs
	e.fmu.Lock()
	defer e.fmu.Unlock()
	if _, exists := e.libs[lib.name]; exists && !replace {
		return "", "ERR Library '" + lib.name + "' already exists"
	}
	for _, f := range lib.funcs {
		if old, ok := e.funcs[f.name]; ok && old.lib.name != lib.name {
			return "", "ERR Function " + f.name + " already exists"
		}
	}
	e.installLocked(lib)
	v.libs[lib.name] = &libLoaded{lib: lib, callbacks: b.callbacks}
	return lib.name, ""
}

func (e *Engine) installLocked(lib *library) {
	if old := e.libs[lib.name]; old != nil {
		for _, f := range old.funcs {
			delete(e.funcs, f.name)
		}
	}
	e.libs[lib.name] = lib
	for _, f := range lib.funcs {
		e.funcs[f.name] = f
	}
	e.libsGen++
}

// FCall runs FCALL or FCALL_RO; argv is the whole command.
func (e *Engine) FCall(c Caller, argv [][]byte) Value {
	name := strings.ToLower(string(argv[0]))
	if len(argv) < 3 {
		return Error(errArity(name))
	}
	e.fmu.RLock()
	f := e.funcs[string(argv[1])]
	e.fmu.RUnlock()
	if f == nil {
		return Error(errFunctionNotFound)
	}
	keys, bad := Keys(argv)
	if bad.Kind == KindError {
		return bad
	}
	ro := name == "fcall_ro"
	if ro && f.flags&FlagNoWrites == 0 {
		return Error(errWriteFlagRO)
	}
	v := e.getVM()
	defer e.putVM(v)
	inst := v.libs[f.lib.name]
	if inst == nil || inst.lib != f.lib {
		b, msg := v.instantiate(f.lib)
		if msg != "" {
			return Error(msg)
		}
		inst = &libLoaded{lib: f.lib, callbacks: b.callbacks}
		v.libs[f.lib.name] = inst
	}
	cb := inst.callbacks[f.name]
	if cb == nil {
		return Error(errFunctionNotFound)
	}
	r := v.newRun()
	r.Name, r.Function, r.Command, r.Keys, r.Flags, r.Start = f.name, true, name, keys, f.flags, time.Now()
	r.ReadOnly = ro || f.flags&FlagNoWrites != 0
	v.hideArgTables()
	L := v.L
	L.Push(cb)
	args := argv[3+len(keys):]
	all := luaStrings(keys, args)
	kt, all := fillStrings(L, nil, keys, all)
	at, _ := fillStrings(L, nil, args, all)
	L.Push(kt)
	L.Push(at)
	return e.executeWith(v, r, c, 2)
}

// Function runs FUNCTION LOAD, LIST, DELETE, FLUSH, DUMP, RESTORE, STATS,
// KILL and HELP; argv[0] is "FUNCTION".
func (e *Engine) Function(argv [][]byte) Value {
	if len(argv) < 2 {
		return Error(errArity("function"))
	}
	sub := strings.ToLower(string(argv[1]))
	switch sub {
	case "load":
		if len(argv) < 3 || len(argv) > 4 {
			return Error(errArity("function|load"))
		}
		replace := false
		if len(argv) == 4 {
			if !strings.EqualFold(string(argv[2]), "replace") {
				return Error("ERR Unknown option given: " + string(argv[2]))
			}
			replace = true
		}
		name, msg := e.loadLibrary(argv[len(argv)-1], replace)
		if msg != "" {
			return Error(msg)
		}
		return BulkString(name)
	case "list":
		return e.functionList(argv[2:])
	case "delete":
		if len(argv) != 3 {
			return Error(errArity("function|delete"))
		}
		e.fmu.Lock()
		defer e.fmu.Unlock()
		lib := e.libs[string(argv[2])]
		if lib == nil {
			return Error(errLibraryNotFound)
		}
		for _, f := range lib.funcs {
			delete(e.funcs, f.name)
		}
		delete(e.libs, lib.name)
		e.libsGen++
		return Status("OK")
	case "flush":
		if len(argv) > 3 {
			return Error(errArity("function|flush"))
		}
		if len(argv) == 3 {
			if m := strings.ToLower(string(argv[2])); m != "sync" && m != "async" {
				return Error(errFunctionFlush)
			}
		}
		e.fmu.Lock()
		e.libs = make(map[string]*library)
		e.funcs = make(map[string]*function)
		e.libsGen++
		e.fmu.Unlock()
		return Status("OK")
	case "dump":
		if len(argv) != 2 {
			return Error(errArity("function|dump"))
		}
		return Bulk(e.dump())
	case "restore":
		if len(argv) < 3 || len(argv) > 4 {
			return Error(errArity("function|restore"))
		}
		policy := "append"
		if len(argv) == 4 {
			policy = strings.ToLower(string(argv[3]))
			if policy != "append" && policy != "replace" && policy != "flush" {
				return Error(errRestorePolicy)
			}
		}
		return e.restore(argv[2], policy)
	case "stats":
		if len(argv) != 2 {
			return Error(errArity("function|stats"))
		}
		return e.functionStats()
	case "kill":
		if len(argv) != 2 {
			return Error(errArity("function|kill"))
		}
		return e.Kill(true)
	case "help":
		return helpReply("FUNCTION", functionHelp)
	}
	return Error(errUnknownSubcommand(string(argv[1]), "FUNCTION"))
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (e *Engine) functionList(opts [][]byte) Value {
	withCode := false
	pattern := ""
	hasPattern := false
	for i := 0; i < len(opts); i++ {
		switch o := strings.ToLower(string(opts[i])); o {
		case "withcode":
			if withCode {
				return Error("ERR Unknown argument withcode")
			}
			withCode = true
		case "libraryname":
			if hasPattern {
				return Error("ERR library name can be given only once")
			}
			if i+1 >= len(opts) {
				return Error("ERR library name argument was not given")
			}
			pattern, hasPattern = string(opts[i+1]), true
			i++
		default:
			return Error("ERR Unknown argument " + string(opts[i]))
		}
	}
	e.fmu.RLock()
	libs := make([]*library, 0, len(e.libs))
	for _, l := range e.libs {
		if hasPattern {
			if ok, _ := path.Match(pattern, l.name); !ok {
				continue
			}
		}
		libs = append(libs, l)
	}
	e.fmu.RUnlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	out := make([]Value, 0, len(libs))
	for _, l := range libs {
		fns := make([]Value, 0, len(l.funcs))
		for _, f := range l.funcs {
			desc := Null()
			if f.desc != nil {
				desc = BulkString(*f.desc)
			}
			flags := Value{Kind: KindSet, Elems: []Value{}}
			for _, n := range f.flags.names() {
				flags.Elems = append(flags.Elems, Status(n))
			}
			fns = append(fns, Map(BulkString("name"), BulkString(f.name),
				BulkString("description"), desc, BulkString("flags"), flags))
		}
		m := Map(BulkString("library_name"), BulkString(l.name),
			BulkString("engine"), BulkString("LUA"),
			BulkString("functions"), Array(fns...))
		if withCode {
			m.Elems = append(m.Elems, BulkString("library_code"), Bulk(l.code))
		}
		out = append(out, m)
	}
	return Array(out...)
}

// functionStats is FUNCTION STATS. Several scripts may run at once here;
// it reports the one that started first.
func (e *Engine) functionStats() Value {
	running := Null()
	var first *RunInfo
	for _, r := range e.Running() {
		if first == nil || r.Start.Before(first.Start) {
			first = &r
		}
	}
	if first != nil {
		running = Map(BulkString("name"), BulkString(first.Name),
			BulkString("command"), Array(BulkString(first.Command)),
			BulkString("duration_ms"), Int(time.Since(first.Start).Milliseconds()))
	}
	e.fmu.RLock()
	nlibs, nfuncs := len(e.libs), len(e.funcs)
	e.fmu.RUnlock()
	return Map(BulkString("running_script"), running,
		BulkString("engines"), Map(BulkString("LUA"), Map(
			BulkString("libraries_count"), Int(int64(nlibs)),
			BulkString("functions_count"), Int(int64(nfuncs)))))
}

var functionHelp = []string{
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
}
