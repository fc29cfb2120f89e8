package script

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// smallNumbers are the Lua numbers 0 to 255 as LValues: a number put in an
// interface is allocated, and commands answer small integers (DEL, EXISTS,
// INCR...) all the time. An interface value is immutable: sharing is safe.
var smallNumbers = func() (n [256]lua.LValue) {
	for i := range n {
		n[i] = lua.LNumber(i)
	}
	return n
}()

// toLua converts a command's reply to a Lua value as Redis does
// (script_lua.c redisProtocolToLuaType): integer -> number, bulk -> string,
// null bulk and null array -> false, array -> table, status -> {ok=},
// error -> {err=}; and the RESP3 types a script sees after
// redis.setresp(3): null -> nil, bool -> boolean, double -> {double=},
// map -> {map={}}, set -> {set={member=true}}, big number -> {big_number=},
// verbatim -> {verbatim_string={format=, string=}}.
func toLua(L *lua.LState, v Value, resp int) lua.LValue {
	switch v.Kind {
	case KindInt:
		if 0 <= v.Int && v.Int < int64(len(smallNumbers)) {
			return smallNumbers[v.Int]
		}
		return lua.LNumber(v.Int)
	case KindBulk:
		return lua.LString(v.Str)
	case KindNull:
		if resp == 3 {
			return lua.LNil
		}
		return lua.LFalse
	case KindStatus:
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(v.Str))
		return t
	case KindError:
		return errorTable(L, string(v.Str))
	case KindArray:
		t := L.CreateTable(len(v.Elems), 0)
		for i, e := range v.Elems {
			t.RawSetInt(i+1, toLua(L, e, resp))
		}
		return t
	case KindMap:
		m := L.CreateTable(0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m.RawSet(toLua(L, v.Elems[i], resp), toLua(L, v.Elems[i+1], resp))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t
	case KindSet:
		s := L.CreateTable(0, len(v.Elems))
		for _, e := range v.Elems {
			s.RawSet(toLua(L, e, resp), lua.LTrue)
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("set", s)
		return t
	case KindBool:
		return lua.LBool(v.Int != 0)
	case KindDouble:
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(v.Float))
		return t
	case KindBigNum:
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(v.Str))
		return t
	case KindVerbatim:
		in := L.CreateTable(0, 2)
		in.RawSetString("string", lua.LString(v.Str))
		in.RawSetString("format", lua.LString(v.Format))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", in)
		return t
	}
	return lua.LFalse
}

// errorTable is Redis's conversion of an error reply to Lua
// (luaPushErrorBuff of "-" + msg): {err="CODE message"}, where CODE is the
// message's first word, or "ERR" when it has only one; a trailing CR LF is
// trimmed.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(errorText(msg)))
	return t
}

// internalError is luaPushError of one of the engine's own messages,
// which carry no code: {err="ERR " .. msg}.
func internalError(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString("ERR "+msg))
	return t
}

func errorText(msg string) string {
	msg = strings.TrimPrefix(msg, "-")
	code, rest, ok := strings.Cut(msg, " ")
	if !ok {
		code, rest = "ERR", msg
	}
	return code + " " + strings.Trim(rest, "\r\n")
}

// fromLua converts a script's return value to a reply as Redis does
// (luaReplyToRedisReply): string -> bulk, number -> integer (truncated),
// true -> 1 (a RESP3 true after setresp(3)), false and nil -> null (false is
// a RESP3 false after setresp(3)), a table with a string err -> error, with
// a string ok -> status, with double/big_number/verbatim_string/map/set ->
// those RESP3 types, else an array of its elements 1, 2, ... up to the first
// nil. depth guards against a table that contains itself.
func fromLua(L *lua.LState, lv lua.LValue, resp int, depth int) Value {
	if depth > maxDepth {
		return Error("ERR reached lua stack limit")
	}
	switch x := lv.(type) {
	case lua.LString:
		return Value{Kind: KindBulk, Str: []byte(string(x))}
	case lua.LNumber:
		return Int(luaToInt64(float64(x)))
	case lua.LBool:
		if resp == 3 {
			return Bool(bool(x))
		}
		if x {
			return Int(1)
		}
		return Null()
	case *lua.LTable:
		if s, ok := x.RawGetString("err").(lua.LString); ok {
			return Error(string(s))
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return Status(string(s))
		}
		if n, ok := x.RawGetString("double").(lua.LNumber); ok {
			return Double(float64(n))
		}
		if s, ok := x.RawGetString("big_number").(lua.LString); ok {
			return Value{Kind: KindBigNum, Str: []byte(string(s))}
		}
		if vt, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, fok := vt.RawGetString("format").(lua.LString)
			s, sok := vt.RawGetString("string").(lua.LString)
			if fok && sok {
				return Value{Kind: KindVerbatim, Format: string(f), Str: []byte(string(s))}
			}
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			out := Value{Kind: KindMap, Elems: []Value{}}
			eachPair(m, func(k, val lua.LValue) {
				out.Elems = append(out.Elems, fromLua(L, k, resp, depth+1), fromLua(L, val, resp, depth+1))
			})
			return out
		}
		if s, ok := x.RawGetString("set").(*lua.LTable); ok {
			out := Value{Kind: KindSet, Elems: []Value{}}
			eachPair(s, func(k, _ lua.LValue) {
				out.Elems = append(out.Elems, fromLua(L, k, resp, depth+1))
			})
			return out
		}
		out := Value{Kind: KindArray, Elems: []Value{}}
		for i := 1; ; i++ {
			e := x.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			out.Elems = append(out.Elems, fromLua(L, e, resp, depth+1))
		}
		return out
	}
	if resp == 3 && lv == lua.LNil {
		return Null()
	}
	return Null()
}

// luaToInt64 is C's (long long) cast of a Lua number: truncation toward
// zero; NaN and values out of range give the minimum, as on x86-64.
func luaToInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

// eachPair calls fn for every pair of t in the order next and pairs give.
// gopher-lua's ForEach ranges over Go maps, in a new order every time, which
// made cmsgpack.pack, cjson.encode and map replies of the same table differ
// from run to run.
func eachPair(t *lua.LTable, fn func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		fn(k, v)
	}
}
