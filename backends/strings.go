package backends

import (
	"math"
	"strconv"
)

// The string commands that read a value to write it, as Updates: each runs
// on every backend through its generic read-modify-write.

// Redis's refusals of the string updates.
const (
	refusedTooLong  Refusal = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	refusedNotFloat Refusal = "ERR value is not a valid float"
	refusedNaN      Refusal = "ERR increment would produce NaN or Infinity"
)

// keepTTL is the expiry of a write that keeps the key's.
var keepTTL = TTL{Mode: TTLKeep}

// Append appends Suffix to the value (APPEND): an absent key is created.
// Length is the value's length after. Max bounds it (Redis's
// proto-max-bulk-len); 0 is no bound. Created as IncrBy's.
type Append struct {
	Suffix  []byte
	Max     int64
	Length  int64
	Created bool
}

func (*Append) Op() string { return "append" }

func (u *Append) Apply(cur Current) (Change, error) {
	u.Created = false
	n := int64(len(cur.Val)) + int64(len(u.Suffix))
	if u.Max > 0 && n > u.Max {
		return Change{}, refusedTooLong
	}
	u.Length, u.Created = n, !cur.Found()
	v := make([]byte, 0, n)
	v = append(append(v, cur.Val...), u.Suffix...)
	return Change{Kind: Put, Val: v, TTL: keepTTL}, nil
}

// SetRange overwrites the value from Offset with Val, padding with zero
// bytes (SETRANGE); Length is the value's length after. An empty Val
// changes nothing and creates no key. Max and Created as Append's.
type SetRange struct {
	Offset  int64
	Val     []byte
	Max     int64
	Length  int64
	Created bool
}

func (*SetRange) Op() string { return "setrange" }

func (u *SetRange) Apply(cur Current) (Change, error) {
	u.Created = false
	if len(u.Val) == 0 {
		u.Length = int64(len(cur.Val))
		return Change{}, nil
	}
	end := u.Offset + int64(len(u.Val))
	if end < u.Offset || (u.Max > 0 && end > u.Max) {
		return Change{}, refusedTooLong
	}
	n := max(end, int64(len(cur.Val)))
	v := make([]byte, n)
	copy(v, cur.Val)
	copy(v[u.Offset:], u.Val)
	u.Length, u.Created = n, !cur.Found()
	return Change{Kind: Put, Val: v, TTL: keepTTL}, nil
}

// IncrByFloat adds Delta to the number stored at the key (INCRBYFLOAT),
// keeping its expiry; an absent key counts as 0. Result is the new value
// as stored: the shortest decimal that reads back as the same float64.
// Created as IncrBy's.
type IncrByFloat struct {
	Delta   float64
	Result  []byte
	Created bool
}

func (*IncrByFloat) Op() string { return "incrbyfloat" }

func (u *IncrByFloat) Apply(cur Current) (Change, error) {
	u.Created = false
	n, err := numberAt(cur, ParseFloat, refusedNotFloat)
	if err != nil {
		return Change{}, err
	}
	n += u.Delta
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return Change{}, refusedNaN
	}
	u.Result, u.Created = strconv.AppendFloat(nil, n, 'f', -1, 64), !cur.Found()
	return Change{Kind: Put, Val: u.Result, TTL: keepTTL}, nil
}

// ParseFloat reads a number as Redis's string2ld does: no spaces, at most
// 5,120 bytes, not NaN (infinities parse, and an increment that makes one
// is refused).
func ParseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5*1024 {
		return 0, false
	}
	switch b[0] {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		// Out of range is a valid float to Redis (strtold saturates).
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// SetBit sets the bit at Offset (bit 0 the most significant of byte 0) to
// Bit (SETBIT), growing the value with zero bytes; Old is the bit's value
// before. Max and Created as Append's.
type SetBit struct {
	Offset  int64
	Bit     byte
	Max     int64
	Old     byte
	Created bool
}

func (*SetBit) Op() string { return "setbit" }

func (u *SetBit) Apply(cur Current) (Change, error) {
	u.Created = false
	i := u.Offset >> 3
	if u.Max > 0 && i+1 > u.Max {
		return Change{}, refusedTooLong
	}
	n := max(int64(len(cur.Val)), i+1)
	v := make([]byte, n)
	copy(v, cur.Val)
	mask := byte(1) << (7 - uint(u.Offset&7))
	u.Old = 0
	if v[i]&mask != 0 {
		u.Old = 1
	}
	if u.Bit == 1 {
		v[i] |= mask
	} else {
		v[i] &^= mask
	}
	u.Created = !cur.Found()
	return Change{Kind: Put, Val: v, TTL: keepTTL}, nil
}
