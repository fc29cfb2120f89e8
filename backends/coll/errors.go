package coll

import "github.com/pgcache/pgcache/backends"

// Refusals in Redis 7.0's words: the RESP front answers them as they are.
const (
	errSyntax      = backends.Refusal("ERR syntax error")
	errNotInteger  = backends.Refusal("ERR value is not an integer or out of range")
	errNotFloat    = backends.Refusal("ERR value is not a valid float")
	errOutOfRange  = backends.Refusal("ERR value is out of range")
	errNotPositive = backends.Refusal("ERR value is out of range, must be positive")
)

// The errors of a command's run that a store doing the command itself
// (PostgreSQL) answers as Run would.
const (
	// ErrHashNotInt: HINCRBY of a field that does not hold an integer.
	ErrHashNotInt = backends.Refusal("ERR hash value is not an integer")
	// ErrIncrOverflow: HINCRBY past int64.
	ErrIncrOverflow = backends.Refusal("ERR increment or decrement would overflow")
	// ErrNaNScore: ZADD INCR or ZINCRBY of inf by -inf.
	ErrNaNScore = backends.Refusal("ERR resulting score is not a number (NaN)")
	// ErrNoSuchKey: LSET of a key that does not exist.
	ErrNoSuchKey = backends.Refusal("ERR no such key")
	// ErrIndexRange: LSET past either end.
	ErrIndexRange = backends.Refusal("ERR index out of range")
)
