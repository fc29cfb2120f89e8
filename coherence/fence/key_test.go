package fence

import (
	"encoding/json"
	"testing"
)

func TestKeyOf(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`"abc"`, "abc"},
		{`"we\"ird\n"`, "we\"ird\n"},
		{`42`, "42"},
		{`9223372036854775807`, "9223372036854775807"}, // no float64 rounding
		{`-5`, "-5"},
		{`1.50`, "1.50"}, // numeric keys keep their scale, as PostgreSQL prints them
		{` 42 `, "42"},
		{`1e3`, "1e3"},
		{`[1, "a"]`, `[1,"a"]`},
		{`[9007199254740993, "b"]`, `[9007199254740993,"b"]`},
	} {
		got, err := KeyOf(json.RawMessage(tc.raw))
		if err != nil || got != tc.want {
			t.Errorf("KeyOf(%s) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

// TestKeyReadsBack: Key builds what KeyOf reads from the JSON the triggers
// log for the same values.
func TestKeyReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vals   []Value
		logged string // as PostgreSQL's jsonb prints it
	}{
		{"text", []Value{{Text: "abc"}}, `"abc"`},
		{"escapes", []Value{{Text: "q\"uo\\te\n\t<&>\u2028é"}}, `"q\"uo\\te\n\t<&>` + "\u2028" + `é"`},
		{"bigint", []Value{{Text: "9007199254740993", Number: true}}, `9007199254740993`},
		{"pair", []Value{{Text: "1", Number: true}, {Text: "a\"b<"}}, `[1, "a\"b<"]`},
		{"uuid and text", []Value{{Text: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}, {Text: ""}}, `["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", ""]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Key(tc.vals...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := KeyOf(json.RawMessage(tc.logged))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("Key = %q, KeyOf(%s) = %q", got, tc.logged, want)
			}
		})
	}
}
