package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// maxStringLen bounds the strings string.rep may build: Redis's
// proto-max-bulk-len, past which no command could take the string anyway.
// gopher-lua's rep asked Go for whatever the script said (string.rep('x',
// 2^40) is a terabyte), an allocation no watchdog can stop once made.
const maxStringLen = 512 << 20

// patchStringLib bounds string.rep and string.format, in the string table
// itself, so s:rep() and s:format() are bounded too.
func patchStringLib(L *lua.LState, lib *lua.LTable) {
	rep := lib.RawGetString("rep").(*lua.LFunction)
	lib.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		n := checkInt(L, 2)
		if n > 0 && int64(len(s))*int64(n) > maxStringLen {
			L.RaiseError("not enough memory")
		}
		L.SetTop(1)
		L.Push(lua.LNumber(n))
		L.Insert(rep, 1)
		L.Call(2, 1)
		return 1
	}))
	format := lib.RawGetString("format").(*lua.LFunction)
	lib.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		if msg := checkFormat(L.CheckString(1)); msg != "" {
			L.RaiseError("%s", msg)
		}
		L.Insert(format, 1)
		L.Call(L.GetTop()-1, 1)
		return 1
	}))
}

// checkFormat refuses what Lua 5.1's string.format refuses: more than five
// flags, or a width or precision of more than two digits (gopher-lua passed
// "%999999999d" to Go, which built the gigabyte of spaces).
func checkFormat(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		j := i
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		if j-i > 5 {
			return "invalid format (repeated flags)"
		}
		digits := func() bool {
			n := 0
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
				n++
			}
			return n <= 2
		}
		ok := digits()
		if j < len(f) && f[j] == '.' {
			j++
			ok = digits() && ok
		}
		if !ok {
			return "invalid format (width or precision too long)"
		}
		i = j
	}
	return ""
}
