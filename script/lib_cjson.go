package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson is the lua-cjson module Redis ships: encode, decode, cjson.null,
// cjson.new and the configuration functions. The configuration lives for
// one run: each script or function starts with lua-cjson's defaults (in
// Redis a setting stays in the Lua state for the scripts after it; here a
// run takes any of several Lua states, so keeping it would make the next
// script's output depend on which one it got).
type cjsonConfig struct {
	sparseConvert  bool // encode an excessively sparse array as an object
	sparseRatio    int  // 0: sparse arrays allowed; else max > items*ratio is sparse
	sparseSafe     int  // arrays up to this index are never sparse
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // NaN and Inf: 0 refused, 1 written as nan/inf, 2 as null
	decodeInvalid  bool
	keepBuffer     bool // no effect here; kept to answer what was set
	precision      int  // significant digits of numbers, "%.<precision>g"
}

var cjsonDefaults = cjsonConfig{
	sparseRatio:    2,
	sparseSafe:     10,
	encodeMaxDepth: 1000,
	decodeMaxDepth: 1000,
	decodeInvalid:  true,
	keepBuffer:     true,
	precision:      14,
}

func (c *cjsonConfig) reset() { *c = cjsonDefaults }

func openCJSON(L *lua.LState, cfg *cjsonConfig) *lua.LTable {
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
		enc := &jsonEncoder{b: &b, cfg: cfg, null: null}
		if msg := enc.value(L.Get(1), 0); msg != "" {
			L.RaiseError("%s", msg)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		d := &jsonDecoder{L: L, s: L.CheckString(1), null: null, cfg: cfg}
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
		c := cjsonDefaults
		L.Push(openCJSON(L, &c))
		return 1
	}))
	cfgFn := func(name string, nargs int, f func(L *lua.LState) int) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if L.GetTop() > nargs {
				L.ArgError(nargs+1, "found too many arguments")
			}
			L.SetTop(nargs)
			return f(L)
		}))
	}
	cfgFn("encode_sparse_array", 3, func(L *lua.LState) int {
		cjsonBoolOption(L, 1, &cfg.sparseConvert)
		cjsonIntOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
		cjsonIntOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
		return 3
	})
	cfgFn("encode_max_depth", 1, func(L *lua.LState) int {
		return cjsonIntOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
	})
	cfgFn("decode_max_depth", 1, func(L *lua.LState) int {
		return cjsonIntOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
	})
	cfgFn("encode_number_precision", 1, func(L *lua.LState) int {
		return cjsonIntOption(L, 1, &cfg.precision, 1, 14)
	})
	cfgFn("encode_keep_buffer", 1, func(L *lua.LState) int {
		return cjsonBoolOption(L, 1, &cfg.keepBuffer)
	})
	cfgFn("decode_invalid_numbers", 1, func(L *lua.LState) int {
		return cjsonBoolOption(L, 1, &cfg.decodeInvalid)
	})
	cfgFn("encode_invalid_numbers", 1, func(L *lua.LState) int {
		options := []string{"off", "on", "null"}
		switch a := L.Get(1).(type) {
		case *lua.LNilType:
		case lua.LBool:
			cfg.encodeInvalid = 0
			if a {
				cfg.encodeInvalid = 1
			}
		default:
			cfg.encodeInvalid = checkOption(L, 1, options)
		}
		if cfg.encodeInvalid < 2 {
			L.Push(lua.LBool(cfg.encodeInvalid == 1))
		} else {
			L.Push(lua.LString(options[cfg.encodeInvalid]))
		}
		return 1
	})
	return t
}

// cjsonIntOption is lua-cjson's json_integer_option: set *setting from
// argument i unless it is nil, and push the setting.
func cjsonIntOption(L *lua.LState, i int, setting *int, min, max int) int {
	if L.Get(i) != lua.LNil {
		n := int(checkInt(L, i))
		if n < min || n > max {
			// lua-cjson names argument 1 whichever it checks.
			L.ArgError(1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = n
	}
	L.Push(lua.LNumber(*setting))
	return 1
}

// cjsonBoolOption is lua-cjson's json_enum_option for on/off settings: a
// boolean, or "on" or "off".
func cjsonBoolOption(L *lua.LState, i int, setting *bool) int {
	switch a := L.Get(i).(type) {
	case *lua.LNilType:
	case lua.LBool:
		*setting = bool(a)
	default:
		*setting = checkOption(L, i, []string{"off", "on"}) == 1
	}
	L.Push(lua.LBool(*setting))
	return 1
}

// checkOption is luaL_checkoption without a default.
func checkOption(L *lua.LState, i int, options []string) int {
	name := L.CheckString(i)
	for n, o := range options {
		if o == name {
			return n
		}
	}
	L.ArgError(i, "invalid option '"+name+"'")
	return 0
}

type jsonEncoder struct {
	b    *strings.Builder
	cfg  *cjsonConfig
	null *lua.LUserData
}

// number writes f as lua-cjson's json_append_number does.
func (e *jsonEncoder) number(f float64) string {
	switch {
	case !math.IsNaN(f) && !math.IsInf(f, 0):
	case e.cfg.encodeInvalid == 0:
		return "Cannot serialise number: must not be NaN or Inf"
	case e.cfg.encodeInvalid == 2:
		e.b.WriteString("null")
		return ""
	case math.IsNaN(f):
		e.b.WriteString("nan")
		return ""
	}
	e.b.WriteString(formatG(f, e.cfg.precision))
	return ""
}

func (e *jsonEncoder) value(v lua.LValue, depth int) string {
	b := e.b
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
		return e.number(float64(x))
	case lua.LString:
		jsonString(b, string(x))
	case *lua.LUserData:
		if x != e.null {
			return "Cannot serialise userdata: type not supported"
		}
		b.WriteString("null")
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth {
			return "Cannot serialise, excessive nesting (" + strconv.Itoa(depth) + ")"
		}
		n := e.arrayLength(x)
		if n == -2 {
			return "Cannot serialise table: excessively sparse array"
		}
		if n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := e.value(x.RawGetInt(i), depth); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		b.WriteByte('{')
		first := true
		var msg string
		eachPair(x, func(k, val lua.LValue) {
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
				b.WriteByte('"')
				if msg = e.number(float64(kk)); msg != "" {
					return
				}
				b.WriteByte('"')
			default:
				msg = "Cannot serialise " + k.Type().String() + ": table key must be a number or string"
				return
			}
			b.WriteByte(':')
			msg = e.value(val, depth)
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
// key is a positive integer (0 for an empty table), -1 when the table is an
// object (some other key, or an excessively sparse array to convert) and
// -2 for an excessively sparse array that is an error.
func (e *jsonEncoder) arrayLength(t *lua.LTable) int {
	max, items := 0, 0
	isArray := true
	eachPair(t, func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || math.Floor(float64(n)) != float64(n) {
			isArray = false
			return
		}
		if float64(n) > float64(max) {
			max = int(math.Min(float64(n), math.MaxInt32))
		}
		items++
	})
	if !isArray {
		return -1
	}
	if c := e.cfg; c.sparseRatio > 0 && max > items*c.sparseRatio && max > c.sparseSafe {
		if !c.sparseConvert {
			return -2
		}
		return -1
	}
	return max
}

// formatG is C's "%.<prec>g", lua-cjson's number format (fpconv_g_fmt).
func formatG(f float64, prec int) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
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
	cfg  *cjsonConfig
	err  string
}

func (d *jsonDecoder) fail(what string) { d.failFound(what, "invalid token") }

func (d *jsonDecoder) failFound(what, found string) {
	if d.err == "" {
		d.err = "Expected " + what + " but found " + found + " at character " + strconv.Itoa(d.i+1)
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
		if depth+1 > d.cfg.decodeMaxDepth {
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
		if !d.cfg.decodeInvalid && d.invalidNumber() {
			d.failFound("value", "invalid number")
			return lua.LNil
		}
		return d.number()
	}
	for _, w := range []struct {
		word string
		v    lua.LValue
	}{{"true", lua.LTrue}, {"false", lua.LFalse}, {"null", d.null}} {
		if strings.HasPrefix(d.s[d.i:], w.word) {
			d.i += len(w.word)
			return w.v
		}
	}
	if d.cfg.decodeInvalid && d.invalidNumber() {
		return d.number()
	}
	d.fail("value")
	return lua.LNil
}

// invalidNumber is lua-cjson's json_is_invalid_number: what strtod reads
// and JSON does not allow (hexadecimal, Inf, NaN, a leading zero).
func (d *jsonDecoder) invalidNumber() bool {
	p := d.s[d.i:]
	p = strings.TrimPrefix(p, "-")
	if len(p) >= 2 && p[0] == '0' && (p[1]|0x20 == 'x' || p[1] >= '0' && p[1] <= '9') {
		return true
	}
	if len(p) > 0 && p[0] <= '9' {
		return false
	}
	lower := strings.ToLower(p[:min(len(p), 3)])
	return lower == "inf" || lower == "nan"
}

// number reads a number as strtod would: decimal, hexadecimal, inf,
// infinity or nan, the sign included.
func (d *jsonDecoder) number() lua.LValue {
	j := d.i
	if j < len(d.s) && (d.s[j] == '-' || d.s[j] == '+') {
		j++
	}
	rest := strings.ToLower(d.s[j:min(len(d.s), j+8)])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		j += 8
	case strings.HasPrefix(rest, "inf"), strings.HasPrefix(rest, "nan"):
		j += 3
	case strings.HasPrefix(rest, "0x"):
		j += 2
		for j < len(d.s) && strings.IndexByte("0123456789abcdefABCDEF", d.s[j]) >= 0 {
			j++
		}
	default:
		for j < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[j]) >= 0 {
			j++
		}
	}
	f, ok := parseLuaNumber(d.s[d.i:j])
	if !ok {
		d.failFound("value", "invalid number")
		return lua.LNil
	}
	d.i = j
	return lua.LNumber(f)
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
		if d.after('}', "comma or object end") {
			return t
		}
	}
	return lua.LNil
}

// after reads what follows an element of an object or array: a comma
// (another element comes) or end, which closes it (true). Anything else
// fails the decode as what says.
func (d *jsonDecoder) after(end byte, what string) (closed bool) {
	d.space()
	switch {
	case d.i < len(d.s) && d.s[d.i] == ',':
		d.i++
	case d.i < len(d.s) && d.s[d.i] == end:
		d.i++
		return true
	default:
		d.fail(what)
	}
	return false
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
		if d.after(']', "comma or array end") {
			return t
		}
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
