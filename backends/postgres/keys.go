package postgres

import (
	"cmp"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pgcache/pgcache/backends"
)

// Key types of kv tables (RouteSpec.KeyType).
const (
	KeyText   = "text" // the default
	KeyUUID   = "uuid"
	KeyBigint = "bigint"
)

// keyType is how a kv table stores its keys and how a Redis key becomes a
// parameter of that type.
//
// A key must name exactly one row and a row be named by exactly one key:
// fences published by triggers carry the key as the database prints it
// (key::text), and an L1 entry stored under another spelling of the same
// value would never be invalidated. So uuid and bigint keys are accepted
// only in the form PostgreSQL prints them: lowercase 8-4-4-4-12 hex, and
// decimal without sign or leading zeros (a minus sign for negatives).
type keyType struct {
	name      string // the key_type option
	sqlType   string // as format_type prints it, for casts and the layout check
	columnDDL string // the column's type in CREATE TABLE
	collation string // the key column's collation, "" for none
	// param turns a key into a statement parameter, or fails with
	// backends.ErrBadKey.
	param func(key string) (any, error)
	// params turns keys into an array parameter.
	params func(keys []string) (any, error)
	// compare orders parameters as the primary key index does, so that
	// multi-key writes lock rows in one global order.
	compare func(a, b any) int
}

var keyTypes = map[string]keyType{
	KeyText: {
		name: KeyText, sqlType: "text", columnDDL: `text COLLATE "C"`, collation: "C",
		param:   func(k string) (any, error) { return k, checkText(k) },
		params:  eachKey(checkText, func(k string) string { return k }),
		compare: func(a, b any) int { return strings.Compare(a.(string), b.(string)) },
	},
	KeyUUID: {
		name: KeyUUID, sqlType: "uuid", columnDDL: "uuid",
		param:   func(k string) (any, error) { return k, checkUUID(k) },
		params:  eachKey(checkUUID, func(k string) string { return k }),
		compare: func(a, b any) int { return strings.Compare(a.(string), b.(string)) }, // lowercase hex sorts as the bytes do
	},
	KeyBigint: {
		name: KeyBigint, sqlType: "bigint", columnDDL: "bigint",
		param: func(k string) (any, error) { return parseBigint(k) },
		params: func(keys []string) (any, error) {
			out := make([]int64, len(keys))
			for i, k := range keys {
				n, err := parseBigint(k)
				if err != nil {
					return nil, err
				}
				out[i] = n
			}
			return out, nil
		},
		compare: func(a, b any) int { return cmp.Compare(a.(int64), b.(int64)) },
	},
}

// array turns parameters made by param into one array parameter.
func (k keyType) array(params []any) any {
	if k.name == KeyBigint {
		out := make([]int64, len(params))
		for i, p := range params {
			out[i] = p.(int64)
		}
		return out
	}
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.(string)
	}
	return out
}

func lookupKeyType(name string) (keyType, bool) {
	if name == "" {
		name = KeyText
	}
	k, ok := keyTypes[name]
	return k, ok
}

// eachKey checks every key and returns them as a []string parameter.
func eachKey(check func(string) error, conv func(string) string) func([]string) (any, error) {
	return func(keys []string) (any, error) {
		out := make([]string, len(keys))
		for i, k := range keys {
			if err := check(k); err != nil {
				return nil, err
			}
			out[i] = conv(k)
		}
		return out, nil
	}
}

// checkText refuses what a PostgreSQL text value cannot hold: a NUL byte,
// or bytes that are not UTF-8 (the database encoding pgcache expects).
func checkText(k string) error {
	if strings.IndexByte(k, 0) >= 0 {
		return fmt.Errorf("%w: %q: a text key cannot contain a NUL byte", backends.ErrBadKey, k)
	}
	if !utf8.ValidString(k) {
		return fmt.Errorf("%w: %q: a text key must be valid UTF-8", backends.ErrBadKey, k)
	}
	return nil
}

// checkUUID accepts the canonical form only: 8-4-4-4-12 lowercase hex.
func checkUUID(k string) error {
	if len(k) != 36 {
		return badUUID(k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return badUUID(k)
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return badUUID(k)
			}
		}
	}
	return nil
}

func badUUID(k string) error {
	return fmt.Errorf("%w: %q is not a uuid in canonical form (lowercase 8-4-4-4-12 hex digits)", backends.ErrBadKey, k)
}

// parseBigint accepts a decimal int64 as PostgreSQL prints it (the same
// rule as Redis's integers: no plus sign, no leading zeros, no spaces).
func parseBigint(k string) (int64, error) {
	n, ok := backends.ParseInt([]byte(k))
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a bigint (decimal, no sign but minus, no leading zeros)", backends.ErrBadKey, k)
	}
	return n, nil
}
