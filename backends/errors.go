package backends

import (
	"errors"
	"strconv"
)

// Error is one of the errors a Backend returns that the fronts know (the
// Err constants). Being constants, no package can change what the others
// compare errors against.
type Error string

func (e Error) Error() string { return string(e) }

// Errors a Backend returns. The fronts map them to Redis's replies and HTTP
// statuses, so a backend wraps its own causes with these where they apply.
const (
	// ErrNotInteger: the stored value is not a decimal integer in int64 range.
	ErrNotInteger Error = "value is not an integer or out of range"
	// ErrOverflow: an increment would overflow int64.
	ErrOverflow Error = "increment or decrement would overflow"
	// ErrUnavailable: the store cannot be reached now; the request may succeed later.
	ErrUnavailable Error = "backend unavailable"
	// ErrBadKey: the key cannot name anything in this store (for example a
	// table route whose key does not parse as the primary key's type).
	ErrBadKey Error = "invalid key"
	// ErrBadValue: the value cannot be stored here (for example a table
	// route given something that is not a JSON object of its columns).
	ErrBadValue Error = "invalid value"
	// ErrValueTooLarge: the value is over the route's max_value_bytes.
	ErrValueTooLarge Error = "value too large"
	// ErrUnsupported: the store cannot do this operation.
	ErrUnsupported Error = "operation not supported by this backend"
	// ErrBusy: the key is held by a script that has run past the busy
	// threshold (Redis's -BUSY); the request may succeed once it ends.
	ErrBusy Error = "busy running a script"
	// ErrUndeclaredKey: an atomic run touched a key it did not declare.
	ErrUndeclaredKey Error = "key not declared by the transaction or script"
	// ErrWrongType: the key holds another type of value than the command
	// works on (a string for HSET, a hash for GET). Its text is Redis's
	// reply, which the fronts send as it is.
	ErrWrongType Error = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

// SpecError is a route option a driver cannot honour.
type SpecError struct {
	Field, Value, Reason string
}

func (e *SpecError) Error() string {
	if e.Value == "" {
		return e.Field + ": " + e.Reason
	}
	return e.Field + ": " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Refusal is an update's refusal in Redis's own words ("ERR value is not
// a valid float"): the fronts answer it as it is, and like ErrNotInteger it
// is the client's doing, not a failure of the store. The key is unchanged.
type Refusal string

func (e Refusal) Error() string { return string(e) }

// ClientCaused reports whether err is the client's doing (a value that is
// not a number, a key of another type, a refused update) rather than a
// failure of the store.
func ClientCaused(err error) bool {
	var r Refusal
	return errors.Is(err, ErrNotInteger) || errors.Is(err, ErrOverflow) || errors.Is(err, ErrWrongType) || errors.As(err, &r)
}

// RefuseTables refuses the table options of a route on a backend that has
// no tables (memory, Valkey), naming the first one set.
func RefuseTables(spec RouteSpec, backendType string) error {
	for _, f := range [...]struct{ field, value string }{
		{"table", spec.Table}, {"durability", spec.Durability}, {"key_type", spec.KeyType},
		{"source_table", spec.SourceTable},
	} {
		if f.value != "" {
			return &SpecError{Field: f.field, Value: f.value, Reason: "the " + backendType + " backend has no tables"}
		}
	}
	if spec.Writable {
		return &SpecError{Field: "writable", Value: "true", Reason: "the " + backendType + " backend has no tables"}
	}
	return nil
}
