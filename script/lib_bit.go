package script

import (
	"math"
	"math/bits"

	lua "github.com/yuin/gopher-lua"
)

// openBit is LuaBitOp's "bit" module, which Redis ships: 32-bit operations
// on Lua numbers, results as signed 32-bit numbers.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	reg := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	ret := func(L *lua.LState, x uint32) int { L.Push(lua.LNumber(int32(x))); return 1 }
	reg("tobit", func(L *lua.LState) int { return ret(L, tobit(L, 1)) })
	reg("bnot", func(L *lua.LState) int { return ret(L, ^tobit(L, 1)) })
	variadic := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			x := tobit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				x = op(x, tobit(L, i))
			}
			return ret(L, x)
		}
	}
	reg("band", variadic(func(a, b uint32) uint32 { return a & b }))
	reg("bor", variadic(func(a, b uint32) uint32 { return a | b }))
	reg("bxor", variadic(func(a, b uint32) uint32 { return a ^ b }))
	shift := func(op func(x uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			x := tobit(L, 1)
			n := uint(tobit(L, 2) & 31)
			return ret(L, op(x, n))
		}
	}
	reg("lshift", shift(func(x uint32, n uint) uint32 { return x << n }))
	reg("rshift", shift(func(x uint32, n uint) uint32 { return x >> n }))
	reg("arshift", shift(func(x uint32, n uint) uint32 { return uint32(int32(x) >> n) }))
	reg("rol", shift(func(x uint32, n uint) uint32 { return bits.RotateLeft32(x, int(n)) }))
	reg("ror", shift(func(x uint32, n uint) uint32 { return bits.RotateLeft32(x, -int(n)) }))
	reg("bswap", func(L *lua.LState) int { return ret(L, bits.ReverseBytes32(tobit(L, 1))) })
	reg("tohex", func(L *lua.LState) int {
		x := tobit(L, 1)
		n := int32(8)
		if L.GetTop() >= 2 {
			n = int32(tobit(L, 2))
		}
		digits := "0123456789abcdef"
		// -MinInt32 is MinInt32 again: LuaBitOp then asked for a string of
		// 2^31 bytes (Redis's copy clamps it like this since 7.0.15).
		if n == math.MinInt32 {
			n = math.MinInt32 + 1
		}
		if n < 0 {
			n = -n
			digits = "0123456789ABCDEF"
		}
		if n > 8 {
			n = 8
		}
		buf := make([]byte, n)
		for i := int(n) - 1; i >= 0; i-- {
			buf[i] = digits[x&15]
			x >>= 4
		}
		L.Push(lua.LString(buf))
		return 1
	})
	return t
}

// tobit normalises argument i to 32 bits as LuaBitOp does: round to the
// nearest integer (ties to even), modulo 2^32.
func tobit(L *lua.LState, i int) uint32 {
	f := float64(L.CheckNumber(i))
	f = math.RoundToEven(f)
	f = math.Mod(f, 4294967296)
	if f < 0 {
		f += 4294967296
	}
	return uint32(uint64(f))
}
