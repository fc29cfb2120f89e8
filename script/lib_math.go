package script

import (
	"math"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// rand48 is Redis's redisLrand48: the lrand48 generator, so math.random
// gives the same sequence on every platform. Redis 7 keeps one generator
// for the process and no longer reseeds it before each script: a script's
// random numbers differ from run to run, and math.randomseed in one script
// sets where the next ones start (the engine shares one rand48 among its
// Lua states the same way).
type rand48 struct {
	mu sync.Mutex
	x  uint64
}

// rand48Start is lrand48's state before any seed (X2, X1, X0 = 0x1234,
// 0xABCD, 0x330E), where Redis's generator starts.
const rand48Start = 0x1234abcd330e

func newRand48() *rand48 { return &rand48{x: rand48Start} }

func (r *rand48) seed(s int32) {
	r.mu.Lock()
	r.x = uint64(uint32(s))<<16 | 0x330e
	r.mu.Unlock()
}

func (r *rand48) next() int32 {
	r.mu.Lock()
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	n := int32(r.x >> 17)
	r.mu.Unlock()
	return n
}

// openMathRandom replaces math.random and math.randomseed with Redis's,
// drawing from r. Like Redis's, they work only while a script or function
// runs (not in FUNCTION LOAD's top-level code).
func (v *vm) openMathRandom(mathLib *lua.LTable, r *rand48) {
	L := v.L
	mathLib.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		if v.run == nil {
			L.RaiseError("math.random can only be called inside a script invocation")
		}
		const max = math.MaxInt32
		f := float64(r.next()%max) / float64(max)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			u := checkInt(L, 1)
			if u < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
		case 2:
			l, u := checkInt(L, 1), checkInt(L, 2)
			if l > u {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(int64(u)-int64(l)+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	mathLib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		if v.run == nil {
			L.RaiseError("math.randomseed can only be called inside a script invocation")
		}
		r.seed(checkInt(L, 1))
		return 0
	}))
}

// checkInt is Lua 5.1's luaL_checkint: a number, or a string that reads as
// one (gopher-lua's CheckInt takes numbers only), truncated to a C int.
func checkInt(L *lua.LState, i int) int32 {
	var f float64
	switch a := L.Get(i).(type) {
	case lua.LNumber:
		f = float64(a)
	case lua.LString:
		n, ok := parseLuaNumber(string(a))
		if !ok {
			L.TypeError(i, lua.LTNumber)
		}
		f = n
	default:
		L.TypeError(i, lua.LTNumber)
	}
	// lua_Integer is ptrdiff_t and luaL_checkint casts it to int: keep the
	// low 32 bits of the truncated value. NaN and out-of-range values are
	// undefined in C; here they give 0 and the wrapped low bits.
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
		return 0
	}
	return int32(int64(f))
}

// parseLuaNumber is lua_str2number: a decimal or 0x hexadecimal number,
// surrounded by optional white space.
func parseLuaNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(body) > 2 && (body[:2] == "0x" || body[:2] == "0X") {
		n, err := strconv.ParseUint(body[2:], 16, 64)
		if err != nil || len(s)-len(body) > 1 {
			return 0, false
		}
		if s[0] == '-' {
			return -float64(n), true
		}
		return float64(n), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// ParseFloat refuses an overflow that strtod reads as ±HUGE_VAL.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}
