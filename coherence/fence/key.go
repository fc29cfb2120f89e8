package fence

import (
	"bytes"
	"encoding/json"
)

// The fence key is a row's key as fences name it. The triggers log each
// key as JSON: one key column as to_jsonb(column), several as the JSON
// array of theirs. The fence key is that JSON read back:
//
//   - one column: a JSON string as its text (abc, a uuid in lower case), a
//     number as written (42, 9007199254740993: never through float64);
//   - several columns: the compact JSON array ([1,"abc"]), numbers bare and
//     everything else a string, as encoding/json writes it.
//
// KeyOf reads a logged key into it (the listener, for every fence), and Key
// builds it from a route key's column values (the backend, for every L1
// miss). The two must agree for every key a route caches, or an UPDATE of a
// row would fence another bucket and leave its entry stale: the coherence
// tests feed every key type through both triggers and compare.

// KeyOf renders one key of a fence payload as its fence key.
func KeyOf(raw json.RawMessage) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	// Numbers stay as written: a bigint key must not round through float64.
	// A bare number, the common key, is its own compact form.
	if n := len(raw); n > 0 && (raw[0] == '-' || isDigit(raw[0])) && isDigit(raw[n-1]) && json.Valid(raw) {
		return string(raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Value is one key column's value as the fence key spells it: its text as
// to_jsonb renders it (an integer in PostgreSQL's spelling, a uuid in lower
// case), and whether to_jsonb makes it a JSON number rather than a string.
type Value struct {
	Text   string
	Number bool
}

// Key returns the fence key of a row key whose columns hold vals, in key
// order: what KeyOf reads from the triggers' log for that row.
func Key(vals ...Value) (string, error) {
	if len(vals) == 1 {
		return vals[0].Text, nil
	}
	parts := make([]any, len(vals))
	for i, v := range vals {
		if v.Number {
			parts[i] = json.Number(v.Text)
		} else {
			parts[i] = v.Text
		}
	}
	b, err := json.Marshal(parts)
	return string(b), err
}
