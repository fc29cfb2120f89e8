package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// rand48 is Redis's redisLrand48: the lrand48 generator, so math.random
// gives the same sequence on every platform. Redis seeds it with 0 before
// each script, so a script's random numbers are the same at every run.
type rand48 struct{ x uint64 }

func (r *rand48) seed(s int32) { r.x = uint64(uint32(s))<<16 | 0x330e }

func (r *rand48) next() int32 {
	r.x = (0x5deece66d*r.x + 0xb) & (1<<48 - 1)
	return int32(r.x >> 17)
}

// openMathRandom replaces math.random and math.randomseed with Redis's.
func openMathRandom(L *lua.LState, mathLib *lua.LTable) *rand48 {
	r := &rand48{}
	r.seed(0)
	mathLib.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		const max = math.MaxInt32
		f := float64(r.next()%max) / float64(max)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(f))
		case 1:
			u := L.CheckInt(1)
			if u < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(u)) + 1))
		case 2:
			l, u := L.CheckInt(1), L.CheckInt(2)
			if l > u {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(f*float64(u-l+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	mathLib.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		r.seed(int32(L.CheckInt(1)))
		return 0
	}))
	return r
}
