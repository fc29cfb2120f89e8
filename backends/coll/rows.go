package coll

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pgcache/pgcache/backends"
)

// HashOfRow reads a table row, a JSON object of its columns (what a table
// route's GET answers), as a hash of its columns: a string column's value
// is its text, a number's and a boolean's their JSON text, a JSON value's
// its compact JSON; a NULL column is no field. Fields keep the columns'
// order.
func HashOfRow(row []byte) (*Hash, error) {
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%w: a row is not a JSON object", backends.ErrBadValue)
	}
	h := NewHash()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: a row: %v", backends.ErrBadValue, err)
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: a row: %v", backends.ErrBadValue, err)
		}
		switch raw[0] {
		case 'n': // null
			continue
		case '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("%w: a row: %v", backends.ErrBadValue, err)
			}
			h.Set(name, []byte(s))
		default:
			var b bytes.Buffer
			if err := json.Compact(&b, raw); err != nil {
				return nil, fmt.Errorf("%w: a row: %v", backends.ErrBadValue, err)
			}
			h.Set(name, b.Bytes())
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%w: a row: %v", backends.ErrBadValue, err)
	}
	return h, nil
}
