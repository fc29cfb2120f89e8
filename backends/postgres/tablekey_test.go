package postgres

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/pgcache/pgcache/backends"
)

var (
	intKey       = []column{{name: "id", typ: "integer", baseType: "integer"}}
	textKey      = []column{{name: "id", typ: "text", baseType: "text"}}
	compositeKey = []column{{name: "a", typ: "bigint", baseType: "bigint"}, {name: "b", typ: "text", baseType: "text"}}
)

func TestParseRowKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		pk   []column
		want []string // nil: ErrBadKey
	}{
		{"42", intKey, []string{"42"}},
		{`"42"`, intKey, []string{"42"}},
		{"[42]", intKey, []string{"42"}},
		{" [ 42 ] ", intKey, nil}, // a bare key is taken as it is: " [ 42 ] " is no integer
		{"-7", intKey, []string{"-7"}},
		{" 42", intKey, nil},
		{"42 ", intKey, nil},
		{"4 2", intKey, nil},
		{"4.2", intKey, nil},
		{"2147483648", intKey, nil},
		{"null", intKey, nil},
		{"[null]", intKey, nil},
		{"", intKey, nil},
		{"abc", textKey, []string{"abc"}},
		{`"abc"`, textKey, []string{"abc"}},
		{`"a\"b"`, textKey, []string{`a"b`}},
		{"true", textKey, []string{"true"}},
		{" \"abc\"", textKey, []string{` "abc"`}},
		{`"abc" `, textKey, []string{`"abc" `}},
		{"truex", textKey, []string{"truex"}},
		{"1.50", textKey, []string{"1.50"}},
		{`["x y"]`, textKey, []string{"x y"}},
		{"", textKey, []string{""}},
		{"[1,2]", textKey, nil},
		{"[{}]", textKey, nil},
		{"a\x00b", textKey, nil},
		{`[1,"x"]`, compositeKey, []string{"1", "x"}},
		{`["1","x"]`, compositeKey, []string{"1", "x"}},
		{`[1,2]`, compositeKey, []string{"1", "2"}},
		{`[1]`, compositeKey, nil},
		{`1`, compositeKey, nil},
		{`["x",1]`, compositeKey, nil},
		{`[1,"x"`, compositeKey, nil},
	} {
		got, err := parseRowKey(tc.key, tc.pk)
		switch {
		case tc.want == nil && !errors.Is(err, backends.ErrBadKey):
			t.Errorf("parseRowKey(%q) = %q, %v; want ErrBadKey", tc.key, got, err)
		case tc.want != nil && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("parseRowKey(%q) = %q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
}

// FuzzParseRowKey: any key either parses into one value per key column, of
// the right type, or is ErrBadKey; it never panics.
func FuzzParseRowKey(f *testing.F) {
	for _, k := range []string{"42", `"abc"`, `[1,"x"]`, `[1e3, true]`, "null", "[", `["\u0000"]`} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, pk := range [][]column{intKey, textKey, compositeKey} {
			vals, err := parseRowKey(key, pk)
			if err != nil {
				if !errors.Is(err, backends.ErrBadKey) {
					t.Fatalf("parseRowKey(%q) = %v, not ErrBadKey", key, err)
				}
				continue
			}
			if len(vals) != len(pk) {
				t.Fatalf("parseRowKey(%q) = %q for %d columns", key, vals, len(pk))
			}
			for i, c := range pk {
				switch c.baseType {
				case "integer", "bigint":
					if _, err := strconv.ParseInt(vals[i], 10, 64); err != nil {
						t.Fatalf("parseRowKey(%q): %q for an integer column", key, vals[i])
					}
				case "text":
					if !utf8.ValidString(vals[i]) {
						t.Fatalf("parseRowKey(%q): %q is not UTF-8", key, vals[i])
					}
				}
			}
		}
	})
}

func TestKVKeyParsers(t *testing.T) {
	for _, tc := range []struct {
		keyType, key string
		ok           bool
	}{
		{KeyUUID, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", true},
		{KeyUUID, "0190A1B2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", false},
		{KeyUUID, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5", false},
		{KeyUUID, "0190a1b2xc3d4-7e5f-8a9b-0c1d2e3f4a5b", false},
		{KeyUUID, "{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}", false},
		{KeyBigint, "-9223372036854775808", true},
		{KeyBigint, "9223372036854775808", false},
		{KeyBigint, "-0", false},
		{KeyText, "", true},
		{KeyText, "\xc3\x28", false},
	} {
		k, _ := lookupKeyType(tc.keyType)
		_, err := k.param(tc.key)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, backends.ErrBadKey)) {
			t.Errorf("%s key %q: %v, want ok=%v", tc.keyType, tc.key, err, tc.ok)
		}
	}
}

// jsonScalarDecoded is jsonScalar as the encoding/json decoder reads it:
// the fast paths of jsonScalar must agree with it on every input.
func jsonScalarDecoded(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", false
	}
	switch c := b[0]; {
	case c == '"':
		var s string
		if b[len(b)-1] != '"' || json.Unmarshal(b, &s) != nil {
			return "", false
		}
		return s, true
	case string(b) == "true" || string(b) == "false":
		return string(b), true
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if d.Decode(&n) != nil || d.InputOffset() != int64(len(b)) {
			return "", false
		}
		return n.String(), true
	}
	return "", false
}

func FuzzJSONScalar(f *testing.F) {
	for _, s := range []string{`42`, `-0`, `01`, `1.`, `1.5e-3`, `1E+9`, `-`, `42 `, ` 42`, `1x`,
		`""`, `"a"`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", "\"tab\there\"", `"`, `"a`, `true`, `false`, `null`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gok := jsonScalar(b)
		want, wok := jsonScalarDecoded(b)
		if got != want || gok != wok {
			t.Fatalf("jsonScalar(%q) = %q, %v; the decoder reads %q, %v", b, got, gok, want, wok)
		}
	})
}
