package script

import (
	"math"
	"strconv"
)

// Kind is the type of a reply.
type Kind uint8

// The reply kinds: RESP2's five plus the RESP3 types Redis converts to and
// from Lua.
const (
	KindNull     Kind = iota // "$-1" / "*-1" in RESP2, "_" in RESP3
	KindStatus               // "+OK"
	KindError                // "-ERR ..."
	KindInt                  // ":1"
	KindBulk                 // "$3\r\nfoo"
	KindArray                // "*n"
	KindMap                  // "%n" (RESP3); Elems holds key, value, key, value...
	KindSet                  // "~n" (RESP3)
	KindDouble               // "," (RESP3)
	KindBool                 // "#t" / "#f" (RESP3); Int is 1 or 0
	KindVerbatim             // "=" (RESP3); Str is the text, Format its three-letter format
	KindBigNum               // "(" (RESP3); Str holds the digits
)

// Value is one reply: what a command answered (parsed from RESP), what a
// script returned (converted from Lua), or what the engine answers itself.
// Only the fields of its Kind are set.
type Value struct {
	Kind   Kind
	Str    []byte  // status, error (without the "-"), bulk, verbatim, big number
	Int    int64   // integer; bool as 1/0
	Float  float64 // double
	Elems  []Value // array, set; map as key, value pairs in order
	Format string  // verbatim format ("txt", "mkd")
}

// Null is the missing value.
func Null() Value { return Value{Kind: KindNull} }

// Status is a simple string reply ("+OK").
func Status(s string) Value { return Value{Kind: KindStatus, Str: []byte(s)} }

// Error is an error reply; msg starts with its code ("ERR ...") and has no
// leading "-".
func Error(msg string) Value { return Value{Kind: KindError, Str: []byte(msg)} }

// Int is an integer reply.
func Int(n int64) Value { return Value{Kind: KindInt, Int: n} }

// Bulk is a bulk string reply; b is kept, not copied.
func Bulk(b []byte) Value { return Value{Kind: KindBulk, Str: b} }

// BulkString is a bulk string reply.
func BulkString(s string) Value { return Value{Kind: KindBulk, Str: []byte(s)} }

// Array is an array reply.
func Array(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Kind: KindArray, Elems: elems}
}

// Map is a RESP3 map of key, value pairs (an array of 2n in RESP2).
func Map(pairs ...Value) Value { return Value{Kind: KindMap, Elems: pairs} }

// Double is a RESP3 double (a bulk string in RESP2).
func Double(f float64) Value { return Value{Kind: KindDouble, Float: f} }

// Bool is a RESP3 boolean (1 or 0 in RESP2).
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, Int: 1}
	}
	return Value{Kind: KindBool}
}

// IsError tells whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == KindError }

// Text is the string of a status, error, bulk, verbatim or big number reply.
func (v Value) Text() string { return string(v.Str) }

// formatDouble writes a double as Redis does: "%.17g", with inf and nan
// spelled as Redis spells them.
func formatDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
