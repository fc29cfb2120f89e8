package script

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// redisAPI builds the redis table scripts and functions see when they run.
func (v *vm) redisAPI() *lua.LTable {
	L := v.L
	t := L.NewTable()
	fn := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	fn("call", func(L *lua.LState) int { return v.redisCall(L, true) })
	fn("pcall", func(L *lua.LState) int { return v.redisCall(L, false) })
	fn("sha1hex", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(internalError(L, "wrong number of arguments"), 0)
		}
		L.Push(lua.LString(sha1hex([]byte(lua.LVAsString(L.Get(1))))))
		return 1
	})
	fn("error_reply", func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			L.Push(internalError(L, "wrong number or type of arguments"))
			return 1
		}
		L.Push(errorTable(L, string(s)))
		return 1
	})
	fn("status_reply", func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			L.Push(internalError(L, "wrong number or type of arguments"))
			return 1
		}
		r := L.CreateTable(0, 1)
		r.RawSetString("ok", s)
		L.Push(r)
		return 1
	})
	fn("setresp", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(internalError(L, "redis.setresp() requires one argument."), 0)
		}
		n := L.ToNumber(1)
		if n != 2 && n != 3 {
			L.Error(internalError(L, "RESP version must be 2 or 3."), 0)
		}
		if v.run != nil {
			v.run.resp = int(n)
		}
		return 0
	})
	fn("set_repl", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.Error(internalError(L, "redis.set_repl() requires two arguments."), 0)
		}
		if f := int(L.ToNumber(1)); f&^3 != 0 {
			L.Error(internalError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 0)
		}
		return 0
	})
	// Deprecated in Redis 7 and always true there; breakpoint and debug act
	// only under the Lua debugger, which pgcache does not have.
	fn("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	fn("breakpoint", func(L *lua.LState) int { L.Push(lua.LFalse); return 1 })
	fn("debug", func(L *lua.LState) int { return 0 })
	fn("acl_check_cmd", func(L *lua.LState) int {
		if L.GetTop() == 0 {
			L.Error(internalError(L, "Please specify at least one argument for this redis lib call"), 0)
		}
		// pgcache's scripts run as the connection's user, which may run
		// every command it reaches.
		L.Push(lua.LTrue)
		return 1
	})
	t.RawSetString("REPL_NONE", lua.LNumber(0))
	t.RawSetString("REPL_AOF", lua.LNumber(1))
	t.RawSetString("REPL_SLAVE", lua.LNumber(2))
	t.RawSetString("REPL_REPLICA", lua.LNumber(2))
	t.RawSetString("REPL_ALL", lua.LNumber(3))
	v.addLogAndVersion(t)
	return t
}

// redisLoadAPI is the redis table FUNCTION LOAD's code sees.
func (v *vm) redisLoadAPI() *lua.LTable {
	L := v.L
	t := L.NewTable()
	t.RawSetString("register_function", L.NewFunction(v.registerFunction))
	v.addLogAndVersion(t)
	return t
}

func (v *vm) addLogAndVersion(t *lua.LTable) {
	L := v.L
	t.RawSetString("log", L.NewFunction(func(L *lua.LState) int {
		argc := L.GetTop()
		if argc < 2 {
			L.Error(internalError(L, "redis.log() requires two arguments or more."), 0)
		}
		lv, ok := L.Get(1).(lua.LNumber)
		if !ok {
			if s, isStr := L.Get(1).(lua.LString); isStr {
				if f, err := strconv.ParseFloat(strings.TrimSpace(string(s)), 64); err == nil {
					lv, ok = lua.LNumber(f), true
				}
			}
		}
		if !ok {
			L.Error(internalError(L, "First argument must be a number (log level)."), 0)
		}
		level := int(lv)
		if level < int(LogDebug) || level > int(LogWarning) {
			L.Error(internalError(L, "Invalid debug level."), 0)
		}
		var b strings.Builder
		for i := 2; i <= argc; i++ {
			switch a := L.Get(i).(type) {
			case lua.LString, lua.LNumber:
				if i != 2 {
					b.WriteByte(' ')
				}
				b.WriteString(a.String())
			}
		}
		v.eng.logf(LogLevel(level), b.String())
		return 0
	}))
	t.RawSetString("LOG_DEBUG", lua.LNumber(LogDebug))
	t.RawSetString("LOG_VERBOSE", lua.LNumber(LogVerbose))
	t.RawSetString("LOG_NOTICE", lua.LNumber(LogNotice))
	t.RawSetString("LOG_WARNING", lua.LNumber(LogWarning))
	t.RawSetString("REDIS_VERSION", lua.LString(v.eng.version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(v.eng.verNum))
}

// redisCall is redis.call (raise true) and redis.pcall (raise false).
func (v *vm) redisCall(L *lua.LState, raise bool) int {
	fail := func(t *lua.LTable) int {
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	if v.run == nil || v.caller == nil {
		return fail(internalError(L, "redis.call/pcall can only be called inside a script invocation"))
	}
	argc := L.GetTop()
	if argc == 0 {
		return fail(internalError(L, "Please specify at least one argument for this redis lib call"))
	}
	size := 0
	for i := 1; i <= argc; i++ {
		switch a := L.Get(i).(type) {
		case lua.LString:
			size += len(a)
		case lua.LNumber:
			size += len("-1.2345678901234567e-308") // the longest "%.17g"
		default:
			return fail(internalError(L, "Lua redis lib command arguments must be strings or integers"))
		}
	}
	// The arguments' bytes in one allocation, each capped so that an
	// append to one cannot write over the next.
	buf := make([]byte, 0, size)
	args := make([][]byte, argc)
	for i := 1; i <= argc; i++ {
		start := len(buf)
		switch a := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, a...)
		case lua.LNumber:
			// Redis formats numbers with "%.17g", not Lua's "%.14g".
			buf = strconv.AppendFloat(buf, float64(a), 'g', 17, 64)
		}
		args[i-1] = buf[start:len(buf):len(buf)]
	}
	L.SetTop(0)
	reply := v.caller.Call(v.run, args)
	if reply.Kind == KindError {
		return fail(errorTable(L, string(reply.Str)))
	}
	L.Push(toLua(L, reply, v.run.resp))
	return 1
}
