package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack, which Redis ships: pack(...) encodes its
// arguments one after another; unpack(s) decodes all the values of s;
// unpack_one(s [, offset]) and unpack_limit(s, limit [, offset]) decode
// some and return the offset to continue from first (-1 at the end).
// Tables nested deeper than 16 encode as nil, as lua-cmsgpack does.
const msgpackMaxNesting = 16

func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.ArgError(0, "MessagePack pack needs input.")
		}
		var out []byte
		for i := 1; i <= n; i++ {
			out = msgpackEncode(out, L.Get(i), 0)
		}
		L.Push(lua.LString(out))
		return 1
	}))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, 1, L.OptInt(2, 0))
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckInt(2), L.OptInt(3, 0))
	}))
	return t
}

func msgpackEncode(b []byte, v lua.LValue, depth int) []byte {
	switch x := v.(type) {
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if f == math.Trunc(f) && !math.IsInf(f, 0) && f >= -9.223372036854775808e18 && f < 1.8446744073709551616e19 {
			if f >= 0 {
				return msgpackUint(b, uint64(f))
			}
			return msgpackInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda)
			b = binary.BigEndian.AppendUint16(b, uint16(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case *lua.LTable:
		if depth >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLen(x); ok {
			b = msgpackHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(b, x.RawGetInt(i), depth+1)
			}
			return b
		}
		n := 0
		eachPair(x, func(_, _ lua.LValue) { n++ })
		b = msgpackHeader(b, n, 0x80, 0xde, 0xdf)
		eachPair(x, func(k, val lua.LValue) {
			b = msgpackEncode(b, k, depth+1)
			b = msgpackEncode(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0) // nil and what msgpack cannot hold
}

// msgpackArrayLen is lua-cmsgpack's table_is_an_array: every key a
// positive integer and as many keys as the largest one.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	ok := true
	eachPair(t, func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) <= 0 || math.Trunc(float64(n)) != float64(n) {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	return max, ok && count == max
}

func msgpackHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		b = append(b, b16)
		return binary.BigEndian.AppendUint16(b, uint16(n))
	}
	b = append(b, b32)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func msgpackUint(b []byte, n uint64) []byte {
	switch {
	case n < 128:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func msgpackInt(b []byte, n int64) []byte {
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackUnpack decodes up to limit values (0: all) from offset.
func msgpackUnpack(L *lua.LState, limit, offset int) int {
	s := L.CheckString(1)
	if offset < 0 || offset > len(s) {
		L.ArgError(2, "Offset is out of bounds")
	}
	d := &msgpackDecoder{L: L, s: s, i: offset}
	var vals []lua.LValue
	for d.i < len(s) && (limit == 0 || len(vals) < limit) {
		vals = append(vals, d.value(0))
		if d.err != "" {
			L.RaiseError("%s", d.err)
		}
	}
	if limit > 0 {
		next := d.i
		if next >= len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if limit > 0 {
		return len(vals) + 1
	}
	return len(vals)
}

type msgpackDecoder struct {
	L   *lua.LState
	s   string
	i   int
	err string
}

func (d *msgpackDecoder) take(n int) string {
	if d.err != "" {
		return ""
	}
	if n < 0 || d.i+n > len(d.s) {
		d.err = "Missing bytes in input."
		return ""
	}
	out := d.s[d.i : d.i+n]
	d.i += n
	return out
}

func (d *msgpackDecoder) uint(n int) uint64 {
	b := d.take(n)
	var v uint64
	for i := 0; i < len(b); i++ {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func (d *msgpackDecoder) value(depth int) lua.LValue {
	if depth > 1000 {
		d.err = "Bad data format in input."
		return lua.LNil
	}
	t := d.take(1)
	if d.err != "" {
		return lua.LNil
	}
	c := t[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return d.array(int(c&0x0f), depth)
	case c&0xf0 == 0x80:
		return d.table(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc, 0xcd, 0xce, 0xcf:
		return lua.LNumber(d.uint(1 << (c - 0xcc)))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(int64(d.uint(8)))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xd9, 0xc4:
		return lua.LString(d.take(int(d.uint(1))))
	case 0xda, 0xc5:
		return lua.LString(d.take(int(d.uint(2))))
	case 0xdb, 0xc6:
		return lua.LString(d.take(int(d.uint(4))))
	case 0xdc:
		return d.array(int(d.uint(2)), depth)
	case 0xdd:
		return d.array(int(d.uint(4)), depth)
	case 0xde:
		return d.table(int(d.uint(2)), depth)
	case 0xdf:
		return d.table(int(d.uint(4)), depth)
	}
	d.err = "Bad data format in input."
	return lua.LNil
}

func (d *msgpackDecoder) array(n, depth int) lua.LValue {
	if n > len(d.s)-d.i {
		d.err = "Missing bytes in input."
		return lua.LNil
	}
	t := d.L.CreateTable(n, 0)
	for i := 1; i <= n && d.err == ""; i++ {
		t.RawSetInt(i, d.value(depth+1))
	}
	return t
}

func (d *msgpackDecoder) table(n, depth int) lua.LValue {
	if n > (len(d.s)-d.i)/2 {
		d.err = "Missing bytes in input."
		return lua.LNil
	}
	t := d.L.CreateTable(0, n)
	for i := 0; i < n && d.err == ""; i++ {
		k := d.value(depth + 1)
		v := d.value(depth + 1)
		if k != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
