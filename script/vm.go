package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Sizes of one VM's stacks. Lua 5.1 stops C calls at 200 levels (LUAI_MAXCCALLS)
// and Redis's scripts rarely nest deeper than a few; the data stack may grow
// to regMax slots (unpack of a large table, deep recursion), then the script
// fails with "registry overflow" instead of taking the process's memory.
const (
	callStackSize = 200
	regSize       = 1024
	regMax        = 1 << 20
)

// vm is one Lua state with Redis's environment. A vm runs one script at a
// time; the engine keeps a pool of them.
//
// The sandbox: gopher-lua has no read-only tables (Redis patches its Lua to
// have them), so every table a script can reach through the globals is seen
// through an empty proxy whose metatable reads through to the real table and
// refuses writes with Redis's "Attempt to modify a readonly table". The
// globals proxy reads through to one of two tables: the run globals (what
// EVAL and FCALL see) or the load globals (what FUNCTION LOAD's code sees:
// only redis.register_function, redis.log and the constants). Functions keep
// the proxy as their environment, so a helper defined while loading a
// library sees the run globals when it is called, as in Redis. Reading a
// global that does not exist raises Redis's "Script attempted to access
// nonexistent global variable". rawset, rawget, next, pairs and setmetatable
// are wrapped to see through (or refuse on) the proxies.
type vm struct {
	L           *lua.LState
	env         *lua.LTable // the globals proxy, every function's environment
	envMeta     *lua.LTable // its metatable; __index is runGlobals or loadGlobals
	runGlobals  *lua.LTable
	loadGlobals *lua.LTable
	handler     *lua.LFunction
	proxies     map[*lua.LTable]*lua.LTable // proxy -> the table it guards
	globalsMeta *lua.LTable                 // what getmetatable(_G) shows
	stringMeta  *lua.LTable                 // what getmetatable('') shows
	eng         *Engine

	run       *Run                           // the run in progress, nil between runs
	caller    Caller                         // the run's Caller
	rec       Run                            // every run's record, reused (see newRun)
	ctx       context.Context                // stops a run at its next instruction when canceled by halt
	cancel    context.CancelFunc             // ctx's
	spawned   bool                           // a coroutine was created since ctx was made
	funcs     map[*evalScript]*lua.LFunction // EVAL scripts' closures (see closure)
	keys      *lua.LTable                    // EVAL's KEYS and ARGV (see argtables.go)
	argv      *lua.LTable
	argsShown bool                  // the globals KEYS and ARGV are keys and argv
	loading   *libraryBuild         // the library being loaded, nil otherwise
	libs      map[string]*libLoaded // libraries instantiated in this vm
	broken    bool                  // killed or panicked: do not reuse
	cjson     *cjsonConfig          // cjson's settings, reset at each run
}

func newVM(e *Engine) *vm {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        regSize,
		RegistryMaxSize:     regMax,
		MinimizeStackMemory: true,
	})
	v := &vm{L: L, eng: e, proxies: make(map[*lua.LTable]*lua.LTable), libs: make(map[string]*libLoaded), cjson: &cjsonConfig{},
		funcs: make(map[*evalScript]*lua.LFunction)}
	v.cjson.reset()
	v.ctx, v.cancel = context.WithCancel(context.Background())
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global

	v.runGlobals = L.NewTable()
	rg := v.runGlobals
	for _, name := range []string{
		"assert", "collectgarbage", "error", "getmetatable", "ipairs", "load",
		"loadstring", "next", "pairs", "rawequal", "rawget", "rawset", "select",
		"setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall",
		"_VERSION",
	} {
		rg.RawSetString(name, g.RawGetString(name))
	}
	rg.RawSetString("unpack", L.NewFunction(unpack))
	v.wrapBuiltins(rg)
	rg.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(0))
		return 1
	}))
	// Redis's Lua cannot load binary chunks, so a dump is of no use; and
	// gopher-lua's only raises "does not support".
	g.RawGetString("string").(*lua.LTable).RawSetString("dump", lua.LNil)
	patchStringLib(L, g.RawGetString("string").(*lua.LTable))
	for _, name := range []string{"string", "table", "math", "coroutine"} {
		lib := g.RawGetString(name).(*lua.LTable)
		rg.RawSetString(name, v.readonly(lib))
	}
	v.watchCoroutines(g.RawGetString("coroutine").(*lua.LTable))
	mathLib := g.RawGetString("math").(*lua.LTable)
	// gopher-lua's math.huge is the largest finite number; Lua's is HUGE_VAL,
	// so 1/0 == math.huge and -math.huge is below every number.
	mathLib.RawSetString("huge", lua.LNumber(math.Inf(1)))
	v.openMathRandom(mathLib, e.rand)
	rg.RawSetString("cjson", v.readonly(openCJSON(L, v.cjson)))
	rg.RawSetString("bit", v.readonly(openBit(L)))
	rg.RawSetString("struct", v.readonly(openStruct(L)))
	rg.RawSetString("cmsgpack", v.readonly(openCMsgpack(L)))
	rg.RawSetString("redis", v.readonly(v.redisAPI()))

	v.loadGlobals = L.NewTable()
	loadAPI := v.redisLoadAPI()
	v.loadGlobals.RawSetString("redis", v.readonly(loadAPI))

	missing := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", lua.LVAsString(L.Get(2)))
		return 0
	})
	// At FUNCTION LOAD, a missing field of redis is refused like a
	// missing global (Redis protects that table the same way).
	for _, t := range []*lua.LTable{v.runGlobals, v.loadGlobals, loadAPI} {
		mt := L.NewTable()
		mt.RawSetString("__index", missing)
		mt.RawSetString("__metatable", lua.LFalse)
		L.SetMetatable(t, mt)
	}

	v.env = L.NewTable()
	v.envMeta = L.NewTable()
	v.envMeta.RawSetString("__index", v.runGlobals)
	v.envMeta.RawSetString("__newindex", L.NewFunction(raiseReadonly))
	v.envMeta.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(v.env, v.envMeta)
	v.proxies[v.env] = v.runGlobals
	rg.RawSetString("_G", v.env)
	v.openTypeMetatables(missing)

	L.Env = v.env
	L.G.Global = v.env
	v.handler = L.NewFunction(v.errorHandler)
	return v
}

// newRun returns v's run record, cleared, for a run of a script or
// function. One record per vm suffices: a vm runs one script at a time,
// and nothing reads a record once its run has ended (see Run.halt).
func (v *vm) newRun() *Run {
	r := &v.rec
	*r = Run{}
	return r
}

// watchCoroutines makes coroutine.create and coroutine.wrap note that a
// coroutine was made. gopher-lua gives a coroutine a context of its own,
// a child of the creating state's: one that outlives the run keeps a place
// among ctx's children, so ctx is replaced after such a run (endCoroutines),
// which also ends those coroutines as a context per run did.
func (v *vm) watchCoroutines(co *lua.LTable) {
	for _, name := range []string{"create", "wrap"} {
		orig := co.RawGetString(name).(*lua.LFunction).GFunction
		co.RawSetString(name, v.L.NewFunction(func(L *lua.LState) int {
			v.spawned = true
			return orig(L)
		}))
	}
}

// endCoroutines is called after each run: see watchCoroutines.
func (v *vm) endCoroutines() {
	if !v.spawned || v.broken {
		return
	}
	v.cancel()
	v.ctx, v.cancel = context.WithCancel(context.Background())
	v.spawned = false
}

// maxClosures bounds how many EVAL scripts' closures a vm keeps.
const maxClosures = 64

// closure returns the function that runs s in v. An EVAL body compiles to
// a function without upvalues whose environment is v.env and which no
// script can reach (scripts see no function of theirs; there is no
// setfenv), so one per script and vm serves every run. The cache is
// emptied when full (SCRIPT FLUSH leaves old scripts in it until then).
func (v *vm) closure(s *evalScript) *lua.LFunction {
	if fn := v.funcs[s]; fn != nil {
		return fn
	}
	fn := v.L.NewFunctionFromProto(s.proto)
	if s.proto.NumUpvalues != 0 {
		return fn // not reached: compileEval's body has none; never share one that has
	}
	if len(v.funcs) >= maxClosures {
		clear(v.funcs)
	}
	v.funcs[s] = fn
	return fn
}

// readonly returns a proxy of t that refuses writes.
func (v *vm) readonly(t *lua.LTable) *lua.LTable {
	L := v.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(raiseReadonly))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	v.proxies[p] = t
	return p
}

func raiseReadonly(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

// backing is the table a proxy guards, or t itself.
func (v *vm) backing(t *lua.LTable) *lua.LTable {
	if b, ok := v.proxies[t]; ok {
		if t == v.env {
			return v.envMeta.RawGetString("__index").(*lua.LTable)
		}
		return b
	}
	return t
}

// wrapBuiltins replaces the base functions that would see (or write) a
// proxy's empty table, and pcall, which Redis changes so that an error table
// ({err=...}) is caught as its message.
func (v *vm) wrapBuiltins(rg *lua.LTable) {
	L := v.L
	rg.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		if _, ok := v.proxies[t]; ok {
			L.Error(lua.LString("Attempt to modify a readonly table"), 0)
		}
		L.RawSet(t, L.CheckAny(2), L.CheckAny(3))
		L.SetTop(1)
		return 1
	}))
	rg.RawSetString("rawget", L.NewFunction(func(L *lua.LState) int {
		t := v.backing(L.CheckTable(1))
		L.Push(L.RawGet(t, L.CheckAny(2)))
		return 1
	}))
	next := L.NewFunction(func(L *lua.LState) int {
		t := v.backing(L.CheckTable(1))
		k, val := t.Next(L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(val)
		return 2
	})
	rg.RawSetString("next", next)
	rg.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	getmt := rg.RawGetString("getmetatable")
	rg.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		switch x := L.CheckAny(1).(type) {
		case *lua.LTable:
			if x == v.env {
				L.Push(v.globalsMeta)
				return 1
			}
			if _, ok := v.proxies[x]; ok {
				// Redis's read-only tables have no metatable.
				L.Push(lua.LNil)
				return 1
			}
		case *lua.LUserData:
		case lua.LString:
			L.Push(v.stringMeta)
			return 1
		default:
			// Lua 5.1 gives the other types no metatable; the ones
			// openTypeMetatables sets only word errors.
			L.Push(lua.LNil)
			return 1
		}
		L.Insert(getmt, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	setmt := rg.RawGetString("setmetatable")
	rg.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok {
			if _, ok := v.proxies[t]; ok {
				L.Error(lua.LString("Attempt to modify a readonly table"), 0)
			}
		}
		L.Insert(setmt, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
	rg.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		fn := L.CheckAny(1)
		nargs := L.GetTop() - 1
		if err := L.PCall(nargs, lua.MultRet, nil); err != nil {
			var obj lua.LValue = lua.LString(err.Error())
			if aerr, ok := err.(*lua.ApiError); ok {
				obj = aerr.Object
			}
			if t, ok := obj.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					obj = s
				}
			}
			L.Push(lua.LFalse)
			L.Push(obj)
			return 2
		}
		_ = fn
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}))
}

// openTypeMetatables gives nil, booleans, numbers, functions and
// coroutines metatables that raise Lua 5.1's own texts ("attempt to index
// a nil value", "attempt to call a number value") where gopher-lua says
// "attempt to index a non-table object(nil) with key 'x'" or "attempt to
// call a non-function object", and adds the same to strings' metatable.
// Scripts see none of them (see getmetatable in wrapBuiltins) but a
// read-only view of strings' one, as in Redis, and of _G's.
func (v *vm) openTypeMetatables(missing *lua.LFunction) {
	L := v.L
	raise := func(what, typ string) *lua.LFunction {
		msg := "attempt to " + what + " a " + typ + " value"
		return L.NewFunction(func(L *lua.LState) int {
			L.RaiseError("%s", msg)
			return 0
		})
	}
	for _, val := range []lua.LValue{lua.LNil, lua.LFalse, lua.LNumber(0), L.NewFunction(raiseReadonly), L} {
		typ := val.Type().String()
		if typ == "channel" {
			continue
		}
		mt := L.NewTable()
		mt.RawSetString("__index", raise("index", typ))
		mt.RawSetString("__newindex", raise("index", typ))
		mt.RawSetString("__call", raise("call", typ))
		L.SetMetatable(val, mt)
	}
	smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable)
	if !ok {
		panic("script: gopher-lua's string library set no metatable")
	}
	smt.RawSetString("__newindex", raise("index", "string"))
	smt.RawSetString("__call", raise("call", "string"))
	// The real metatable keeps the real string table as __index (method
	// calls stay fast); what scripts see reads through to the read-only one.
	shown := L.NewTable()
	shown.RawSetString("__index", v.runGlobals.RawGetString("string"))
	v.stringMeta = v.readonly(shown)
	smt.RawSetString("__metatable", v.stringMeta)

	// Redis's _G has a metatable whose __index refuses unknown globals.
	gm := L.NewTable()
	gm.RawSetString("__index", missing)
	v.globalsMeta = v.readonly(gm)
}

// errorHandler is the message handler of every run, Redis's
// __redis__err__handler: it turns the error into a table {err=, source=,
// line=} naming the script position the error came from (the caller of the
// Go function that raised it, if one did).
func (v *vm) errorHandler(L *lua.LState) int {
	errv := L.Get(1)
	var t *lua.LTable
	if et, ok := errv.(*lua.LTable); ok {
		t = et
	} else {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+lua.LVAsString(L.ToStringMeta(errv))))
	}
	if v.run != nil && v.run.stopReason() != "" {
		t = L.NewTable()
		t.RawSetString("err", lua.LString(v.run.stopReason()))
	}
	// Level 0 is this handler; level 1 is the function that raised.
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" {
			continue
		}
		t.RawSetString("source", lua.LString("@"+dbg.Source))
		t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		break
	}
	L.Push(t)
	return 1
}

// sha1hex is Redis's script name: the SHA1 of the body, lowercase hex.
func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// maxUnpack is Lua 5.1's LUAI_MAXCSTACK: lua_checkstack refuses more.
const maxUnpack = 8000

// unpack is Lua 5.1's luaB_unpack. gopher-lua's pushes whatever range it is
// given, so unpack({}, 0, 2^31-1) ran for as long as it took to fail; Lua
// refuses a range its stack cannot hold before pushing anything.
func unpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt64(2, 1)
	e := L.OptInt64(3, int64(t.Len()))
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n > maxUnpack-int64(L.GetTop()) {
		L.RaiseError("too many results to unpack")
	}
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(int(i)))
	}
	return int(n)
}
