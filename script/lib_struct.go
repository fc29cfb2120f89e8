package script

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openStruct is Roberto Ierusalimschy's struct library, which Redis
// ships: struct.pack(fmt, ...), struct.unpack(fmt, s [, pos]) and
// struct.size(fmt). Formats: "<" little endian, ">" big endian, "!n"
// alignment, "x" a pad byte, "b"/"B" char, "h"/"H" short, "l"/"L" long (8),
// "T" size_t (8), "i"/"I"[n] int of n bytes (default 4), "f" float, "d"
// double, "s" zero-terminated string, "c"[n] n chars ("c0" in unpack: the
// length is the previous number), " " ignored.
func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

type structFmt struct {
	L      *lua.LState
	f      string
	i      int
	little bool
	align  int
}

func newStructFmt(L *lua.LState, f string) *structFmt {
	return &structFmt{L: L, f: f, little: true, align: 1}
}

// num reads an optional size after an option.
func (s *structFmt) num(def int) int {
	if s.i >= len(s.f) || s.f[s.i] < '0' || s.f[s.i] > '9' {
		return def
	}
	n := 0
	for s.i < len(s.f) && s.f[s.i] >= '0' && s.f[s.i] <= '9' {
		n = n*10 + int(s.f[s.i]-'0')
		s.i++
		if n > 1<<30 {
			s.L.RaiseError("integral size overflow")
		}
	}
	return n
}

// next returns the next option and its size; size -1 for options that
// take no room of their own (endianness, alignment, spaces).
func (s *structFmt) next() (byte, int) {
	op := s.f[s.i]
	s.i++
	switch op {
	case 'b', 'B', 'x':
		return op, 1
	case 'h', 'H':
		return op, 2
	case 'l', 'L', 'T':
		return op, 8
	case 'f':
		return op, 4
	case 'd':
		return op, 8
	case 'c':
		return op, s.num(1)
	case 's':
		return op, 0
	case 'i', 'I':
		n := s.num(4)
		if n > 8 {
			s.L.RaiseError("integral size %d is larger than limit of 8", n)
		}
		return op, n
	case ' ':
		return op, -1
	case '<':
		s.little = true
		return op, -1
	case '>':
		s.little = false
		return op, -1
	case '!':
		s.align = s.num(8)
		return op, -1
	case '=':
		s.little = true
		return op, -1
	}
	s.L.RaiseError("invalid format option '%c'", op)
	return 0, 0
}

// pad is the padding before an option of size n at position pos.
func (s *structFmt) pad(op byte, n, pos int) int {
	if op == 'c' || op == 's' || op == 'x' || n <= 1 {
		return 0
	}
	a := n
	if a > s.align {
		a = s.align
	}
	if a&(a-1) != 0 {
		s.L.ArgError(1, "alignment must be power of 2")
	}
	return (a - pos&(a-1)) & (a - 1)
}

func (s *structFmt) putInt(b []byte, v uint64, n int) []byte {
	for i := 0; i < n; i++ {
		shift := uint(i) * 8
		if !s.little {
			shift = uint(n-1-i) * 8
		}
		if shift >= 64 {
			b = append(b, 0)
			continue
		}
		b = append(b, byte(v>>shift))
	}
	return b
}

func structPack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	arg := 2
	var out []byte
	for s.i < len(s.f) {
		op, n := s.next()
		if n < 0 {
			continue
		}
		for p := s.pad(op, n, len(out)); p > 0; p-- {
			out = append(out, 0)
		}
		switch op {
		case 'x':
			out = append(out, 0)
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			f := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if f < 0 {
				v = uint64(int64(f))
			} else {
				v = uint64(f)
			}
			out = s.putInt(out, v, n)
		case 'f':
			v := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			out = s.putInt(out, uint64(v), 4)
		case 'd':
			v := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			out = s.putInt(out, v, 8)
		case 'c', 's':
			str := L.CheckString(arg)
			arg++
			l := len(str)
			if op == 'c' && n == 0 {
				n = l
			}
			if op == 'c' {
				if l < n {
					L.ArgError(arg-1, "string too short")
				}
				out = append(out, str[:n]...)
			} else {
				out = append(out, str...)
				out = append(out, 0)
			}
		}
	}
	L.Push(lua.LString(out))
	return 1
}

func (s *structFmt) getInt(b string, signed bool, n int) float64 {
	var v uint64
	for i := 0; i < n; i++ {
		idx := i
		if s.little {
			idx = n - 1 - i
		}
		v = v<<8 | uint64(b[idx])
	}
	if signed && n < 8 && n > 0 {
		shift := uint(64 - n*8)
		return float64(int64(v<<shift) >> shift)
	}
	if signed {
		return float64(int64(v))
	}
	return float64(v)
}

func structUnpack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset must be 1 or greater")
	}
	count := 0
	var prev float64
	need := func(n int) {
		if pos+n > len(data) || pos+n < pos {
			L.ArgError(2, "data string too short")
		}
	}
	for s.i < len(s.f) {
		op, n := s.next()
		if n < 0 {
			continue
		}
		pos += s.pad(op, n, pos)
		switch op {
		case 'x':
			need(1)
			pos++
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			need(n)
			prev = s.getInt(data[pos:pos+n], strings.IndexByte("bhli", op) >= 0, n)
			L.Push(lua.LNumber(prev))
		case 'f':
			need(4)
			bits := uint32(s.getInt(data[pos:pos+4], false, 4))
			L.Push(lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			need(8)
			var bits uint64
			if s.little {
				bits = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				bits = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			L.Push(lua.LNumber(math.Float64frombits(bits)))
		case 'c':
			if n == 0 {
				if count == 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				n = int(prev)
				L.Pop(1)
				count--
			}
			need(n)
			L.Push(lua.LString(data[pos : pos+n]))
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+end]))
			n = end + 1
		}
		pos += n
		count++
	}
	L.Push(lua.LNumber(pos + 1))
	return count + 1
}

func structSize(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	pos := 0
	for s.i < len(s.f) {
		op, n := s.next()
		if n < 0 {
			continue
		}
		if op == 's' || op == 'c' && n == 0 {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		pos += s.pad(op, n, pos) + n
	}
	L.Push(lua.LNumber(pos))
	return 1
}
