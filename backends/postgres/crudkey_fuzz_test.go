package postgres

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence/fence"
)

// FuzzCRUDKey fuzzes what follows the prefix of a CRUD:<db>.<schema>.<table>:
// key (the router strips the prefix; HTTP's ?id= is the same string): the
// row key of a table route, against every kind of primary key a route can
// fence. Any key either parses, one value per key column, or is ErrBadKey.
// And when a key parses and the route can fence it, its fence key — what
// an L1 entry for it is checked against — is what the triggers publish
// for the row the key names, as the listener reads it. Were it not, an
// UPDATE of that row would fence another bucket and leave the entry
// stale.
func FuzzCRUDKey(f *testing.F) {
	for _, k := range []string{
		"42", "007", "+7", "-0", `"42"`, "[42]", `[1,"x"]`, `["1","x"]`, `[007]`, `["007","x"]`,
		"abc", `"a\"b"`, `["\u00e9"]`, "true", "1.50", "null", "[", "",
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B",
		"{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}", "0190a1b2c3d47e5f8a9b0c1d2e3f4a5b",
	} {
		f.Add(k)
	}
	uuidKey := []column{{name: "id", typ: "uuid", baseType: "uuid"}}
	smallKey := []column{{name: "id", typ: "smallint", baseType: "smallint"}}
	uuidText := []column{{name: "u", typ: "uuid", baseType: "uuid"}, {name: "t", typ: "text", baseType: "text"}}
	f.Fuzz(func(t *testing.T, key string) {
		for _, pk := range [][]column{intKey, smallKey, textKey, uuidKey, compositeKey, uuidText} {
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
			tbl := &Table{schema: "public", name: "t"}
			tbl.shape.Store(&tableShape{pk: pk})
			got, err := tbl.FenceKey(key)
			if err != nil {
				if !errors.Is(err, errFenceKey) {
					t.Fatalf("FenceKey(%q) = %v after the key parsed", key, err)
				}
				continue // not cached: safe
			}
			published, ok := triggerKey(vals, pk)
			if !ok {
				continue // PostgreSQL refuses the key: no row, nothing to fence
			}
			want, err := fence.KeyOf(published)
			if err != nil {
				t.Fatalf("fence.KeyOf(%s): %v", published, err)
			}
			if got != want {
				t.Fatalf("key %q (%v): L1 checks fence key %q, the triggers publish %s, read as %q", key, columnTypes(pk), got, published, want)
			}
		}
	})
}

// triggerKey is what the fence triggers publish for the row whose key
// columns take the text values vals: to_jsonb of the one key column, or a
// jsonb array of them. ok is false when PostgreSQL would refuse a value.
func triggerKey(vals []string, pk []column) (json.RawMessage, bool) {
	parts := make([]any, len(vals))
	for i, v := range vals {
		switch c := pk[i]; {
		case isInteger(c):
			n, err := strconv.ParseInt(v, 10, 64) // the column's range is checked by parseRowKey
			if err != nil {
				return nil, false
			}
			parts[i] = json.Number(strconv.FormatInt(n, 10))
		case c.baseType == "uuid":
			u, ok := pgUUID(v)
			if !ok {
				return nil, false
			}
			parts[i] = u
		default:
			parts[i] = v
		}
	}
	var b []byte
	if len(parts) == 1 {
		b, _ = json.Marshal(parts[0])
	} else {
		b, _ = json.Marshal(parts)
	}
	return b, true
}

// pgUUID reads a uuid as PostgreSQL's uuid_in does (an optional pair of
// braces, a hyphen allowed after any group of four hex digits) and
// returns it as PostgreSQL prints it.
func pgUUID(s string) (string, bool) {
	braces := strings.HasPrefix(s, "{")
	if braces {
		s = s[1:]
	}
	var b [16]byte
	for i := range b {
		if len(s) < 2 {
			return "", false
		}
		if _, err := hex.Decode(b[i:i+1], []byte(s[:2])); err != nil {
			return "", false
		}
		s = s[2:]
		if len(s) > 0 && s[0] == '-' && i%2 == 1 && i < 15 {
			s = s[1:]
		}
	}
	if braces {
		if !strings.HasPrefix(s, "}") {
			return "", false
		}
		s = s[1:]
	}
	if s != "" {
		return "", false
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

func columnTypes(pk []column) []string {
	var out []string
	for _, c := range pk {
		out = append(out, c.typ)
	}
	return out
}
