package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson is the lua-cjson module Redis ships: encode, decode and cjson.null.
// Its configuration functions (encode_keep_buffer, encode_max_depth, ...)
// are accepted and answer the defaults without changing them: the module is
// shared by every script that runs in a Lua state, and a setting one script
// made must not change another's output.
const (
	cjsonMaxDepth    = 1000
	cjsonSparseRatio = 2
	cjsonSparseSafe  = 10
)

func openCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData() // lua-cjson's null is a light userdata NULL
	t.RawSetString("null", null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		var b strings.Builder
		if msg := cjsonEncode(&b, L.Get(1), null, 0); msg != "" {
			L.RaiseError("%s", msg)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		d := &jsonDecoder{L: L, s: L.CheckString(1), null: null}
		v := d.value(0)
		d.space()
		if d.err == "" && d.i < len(d.s) {
			d.fail("the end")
		}
		if d.err != "" {
			L.RaiseError("%s", d.err)
		}
		L.Push(v)
		return 1
	}))
	t.RawSetString("new", L.NewFunction(func(L *lua.LState) int {
		L.Push(openCJSON(L))
		return 1
	}))
	settings := map[string][]lua.LValue{
		"encode_keep_buffer":      {lua.LTrue},
		"encode_max_depth":        {lua.LNumber(cjsonMaxDepth)},
		"decode_max_depth":        {lua.LNumber(cjsonMaxDepth)},
		"encode_number_precision": {lua.LNumber(14)},
		"encode_sparse_array":     {lua.LFalse, lua.LNumber(cjsonSparseRatio), lua.LNumber(cjsonSparseSafe)},
		"encode_invalid_numbers":  {lua.LFalse},
		"decode_invalid_numbers":  {lua.LTrue},
	}
	for name, vals := range settings {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			for _, v := range vals {
				L.Push(v)
			}
			return len(vals)
		}))
	}
	return t
}

func cjsonEncode(b *strings.Builder, v lua.LValue, null *lua.LUserData, depth int) string {
	switch x := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "Cannot serialise number: must not be NaN or Inf"
		}
		b.WriteString(formatG14(f))
	case lua.LString:
		jsonString(b, string(x))
	case *lua.LUserData:
		if x != null {
			return "Cannot serialise userdata: type not supported"
		}
		b.WriteString("null")
	case *lua.LTable:
		depth++
		if depth > cjsonMaxDepth {
			return "Cannot serialise, excessive nesting (" + strconv.Itoa(depth) + ")"
		}
		n, isArray := arrayLength(x)
		if isArray && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := cjsonEncode(b, x.RawGetInt(i), null, depth); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		if n == -1 {
			return "Cannot serialise table: excessively sparse array"
		}
		b.WriteByte('{')
		first := true
		var msg string
		x.ForEach(func(k, val lua.LValue) {
			if msg != "" {
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				jsonString(b, string(kk))
			case lua.LNumber:
				jsonString(b, formatG14(float64(kk)))
			default:
				msg = "Cannot serialise table: table key must be a number or string"
				return
			}
			b.WriteByte(':')
			msg = cjsonEncode(b, val, null, depth)
		})
		if msg != "" {
			return msg
		}
		b.WriteByte('}')
	default:
		return "Cannot serialise " + v.Type().String() + ": type not supported"
	}
	return ""
}

// arrayLength is lua-cjson's lua_array_length: the largest key when every
// key is a positive integer (0 for an empty table), -1 for an excessively
// sparse array, and false when some key is not a positive integer.
func arrayLength(t *lua.LTable) (int, bool) {
	max, items := 0, 0
	isArray := true
	t.ForEach(func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || math.Floor(float64(n)) != float64(n) {
			isArray = false
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if !isArray {
		return 0, false
	}
	if max > cjsonSparseSafe && max > items*cjsonSparseRatio {
		return -1, false
	}
	return max, true
}

// formatG14 is C's "%.14g", Lua 5.1's number format.
func formatG14(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func jsonString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type jsonDecoder struct {
	L    *lua.LState
	s    string
	i    int
	null *lua.LUserData
	err  string
}

func (d *jsonDecoder) fail(what string) {
	if d.err == "" {
		d.err = "Expected " + what + " but found invalid token at character " + strconv.Itoa(d.i+1)
	}
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	if d.err != "" {
		return lua.LNil
	}
	d.space()
	if d.i >= len(d.s) {
		d.fail("value")
		return lua.LNil
	}
	switch c := d.s[d.i]; {
	case c == '{' || c == '[':
		if depth+1 > cjsonMaxDepth {
			d.err = "Found too many nested data structures (" + strconv.Itoa(depth+1) + ") at character " + strconv.Itoa(d.i+1)
			return lua.LNil
		}
		if c == '{' {
			return d.object(depth + 1)
		}
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return lua.LNil
		}
		return lua.LString(s)
	case c == '-' || c >= '0' && c <= '9':
		j := d.i
		for j < len(d.s) && strings.IndexByte("+-0123456789.eExX", d.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(d.s[d.i:j], 64)
		if err != nil {
			d.fail("value")
			return lua.LNil
		}
		d.i = j
		return lua.LNumber(f)
	}
	for word, v := range map[string]lua.LValue{"true": lua.LTrue, "false": lua.LFalse, "null": d.null} {
		if strings.HasPrefix(d.s[d.i:], word) {
			d.i += len(word)
			return v
		}
	}
	d.fail("value")
	return lua.LNil
}

func (d *jsonDecoder) object(depth int) lua.LValue {
	t := d.L.NewTable()
	d.i++ // {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return t
	}
	for d.err == "" {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			d.fail("object key string")
			return lua.LNil
		}
		k, ok := d.str()
		if !ok {
			return lua.LNil
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			d.fail("colon")
			return lua.LNil
		}
		d.i++
		t.RawSetString(k, d.value(depth))
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return t
		}
		d.fail("comma or object end")
	}
	return lua.LNil
}

func (d *jsonDecoder) array(depth int) lua.LValue {
	t := d.L.NewTable()
	d.i++ // [
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return t
	}
	for n := 1; d.err == ""; n++ {
		t.RawSetInt(n, d.value(depth))
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return t
		}
		d.fail("comma or array end")
	}
	return lua.LNil
}

func (d *jsonDecoder) str() (string, bool) {
	d.i++ // opening quote
	var b strings.Builder
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return b.String(), true
		case c == '\\':
			if d.i+1 >= len(d.s) {
				d.fail("string")
				return "", false
			}
			e := d.s[d.i+1]
			d.i += 2
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", false
				}
				if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(d.s[d.i:], `\u`) {
					d.i += 2
					lo, ok := d.hex4()
					if !ok {
						return "", false
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				b.WriteRune(rune(r))
			default:
				d.fail("string")
				return "", false
			}
		default:
			b.WriteByte(c)
			d.i++
		}
	}
	d.fail("string")
	return "", false
}

func (d *jsonDecoder) hex4() (int, bool) {
	if d.i+4 > len(d.s) {
		d.fail("string")
		return 0, false
	}
	n, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil {
		d.fail("string")
		return 0, false
	}
	d.i += 4
	return int(n), true
}
