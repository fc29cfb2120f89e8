package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pgcache/pgcache/backends"
)

// CRUDPrefix is the RESP key prefix of a table route's rows, as
// pg_local_cache spells it ("Cache-aside without the race"): CRUD:<db>.<schema>.<table>: followed
// by the primary key. The router strips it; the backend sees the key.
func CRUDPrefix(dbname, schema, table string) string {
	return backends.CRUDMark + dbname + "." + schema + "." + table + ":"
}

// parseRowKey reads a table route's key into one text value per primary
// key column, to be cast to the column's type by the statement. The key is
//
//   - a JSON array with one value per key column, in key order: [1,"a"];
//   - for a one-column key, a JSON scalar (42, "abc", true) or, when the
//     key is not JSON, the bare text (abc): what an HTTP ?id= carries.
//
// JSON strings, numbers and booleans are taken as their text; null,
// objects and arrays inside the array are refused. Integer and text key
// columns are checked here; other types are checked by PostgreSQL's cast,
// whose refusal is reported as the same backends.ErrBadKey.
func parseRowKey(key string, pk []column) ([]string, error) {
	var vals []string
	switch {
	case strings.HasPrefix(key, "["):
		var elems []json.RawMessage
		if err := json.Unmarshal([]byte(key), &elems); err != nil {
			return nil, badRowKey(key, pk, "not a JSON array")
		}
		if len(elems) != len(pk) {
			return nil, badRowKey(key, pk, fmt.Sprintf("%d values for a key of %d columns", len(elems), len(pk)))
		}
		vals = make([]string, len(elems))
		for i, e := range elems {
			v, ok := jsonScalar(e)
			if !ok {
				return nil, badRowKey(key, pk, fmt.Sprintf("value %d (%s) is not a string, number or boolean", i+1, e))
			}
			vals[i] = v
		}
	case len(pk) == 1:
		v, ok := jsonScalar([]byte(key))
		if !ok {
			if key == "null" {
				return nil, badRowKey(key, pk, "a key cannot be null")
			}
			v = key // not JSON: the bare value
		}
		vals = []string{v}
	default:
		return nil, badRowKey(key, pk, "a key of several columns is a JSON array")
	}
	for i, c := range pk {
		if err := checkKeyValue(vals[i], c); err != nil {
			return nil, badRowKey(key, pk, err.Error())
		}
	}
	return vals, nil
}

// jsonScalar returns the text of a JSON string, number or boolean.
// Surrounding spaces are not JSON's here: " 42" is the bare text " 42".
// It runs for every read of a table route's key (the L1's fence key and
// the query's parameters), so the common spellings take no decoder: a
// number is its own text, and a string without escapes its bytes.
func jsonScalar(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", false
	}
	switch c := b[0]; {
	case c == '"':
		if len(b) < 2 || b[len(b)-1] != '"' {
			return "", false
		}
		if in := b[1 : len(b)-1]; plainJSONString(in) {
			return string(in), true
		}
		var s string
		if json.Unmarshal(b, &s) != nil {
			return "", false
		}
		return s, true
	case string(b) == "true" || string(b) == "false":
		return string(b), true
	case c == '-' || (c >= '0' && c <= '9'):
		// A valid JSON text that starts so is a number; ending in a digit,
		// it has no trailing space. A number's text is its json.Number.
		if last := b[len(b)-1]; last < '0' || last > '9' || !json.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	return "", false
}

// plainJSONString reports whether b, the inside of a JSON string, is its
// own value: valid UTF-8 with no escape, quote or control character.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// checkKeyValue checks a key value against its column where Go can do it
// without a round trip.
func checkKeyValue(v string, c column) error {
	bits := 0
	switch c.baseType {
	case "smallint":
		bits = 16
	case "integer":
		bits = 32
	case "bigint":
		bits = 64
	case "text", "character varying", "bpchar":
		if err := checkText(v); err != nil {
			return fmt.Errorf("column %s: cannot contain a NUL byte or bytes that are not UTF-8", c.name)
		}
		return nil
	default:
		return nil
	}
	if _, err := strconv.ParseInt(v, 10, bits); err != nil {
		return fmt.Errorf("column %s is %s and %q is not one", c.name, c.typ, v)
	}
	return nil
}

func badRowKey(key string, pk []column, reason string) error {
	cols := make([]string, len(pk))
	for i, c := range pk {
		cols[i] = c.name + " " + c.typ
	}
	return fmt.Errorf("%w: %q for primary key (%s): %s", backends.ErrBadKey, key, strings.Join(cols, ", "), reason)
}

// rowValue checks that a table route's value is a JSON object of the
// table's columns and returns it with the primary key columns set from the
// key: the key names the row, whatever the object says.
func rowValue(val []byte, rel *relation, keyVals []string) ([]byte, error) {
	var obj map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(val))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil || obj == nil || d.More() {
		return nil, fmt.Errorf("%w: not a JSON object of the columns of %s", backends.ErrBadValue, rel.qualified())
	}
	for name := range obj {
		if rel.column(name) < 0 {
			return nil, fmt.Errorf("%w: %s has no column %q", backends.ErrBadValue, rel.qualified(), name)
		}
	}
	for i, ci := range rel.pk {
		s, _ := json.Marshal(keyVals[i]) // json_populate_record reads a JSON string as the column's text input
		obj[rel.columns[ci].name] = s
	}
	return json.Marshal(obj)
}
