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
