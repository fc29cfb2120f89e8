package coll

import "github.com/pgcache/pgcache/backends"

// Refusals in Redis 7.0's words: the RESP front answers them as they are.
// Every text the package answers is here, once.
const (
	errSyntax      = backends.Refusal("ERR syntax error")
	errNotInteger  = backends.Refusal("ERR value is not an integer or out of range")
	errNotFloat    = backends.Refusal("ERR value is not a valid float")
	errOutOfRange  = backends.Refusal("ERR value is out of range")
	errNotPositive = backends.Refusal("ERR value is out of range, must be positive")
	// errCountRange: getRangeLongFromObjectOrReply's for a count that may
	// be -LONG_MAX to LONG_MAX (HRANDFIELD, SRANDMEMBER, ZRANDMEMBER).
	errCountRange = backends.Refusal("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")

	// The numbers of the options.
	errNumkeys       = backends.Refusal("ERR numkeys should be greater than 0")
	errNumkeysArgs   = backends.Refusal("ERR Number of keys can't be greater than number of args")
	errCountZero     = backends.Refusal("ERR count should be greater than 0")
	errCountNegative = backends.Refusal("ERR COUNT can't be negative")
	errLimitNegative = backends.Refusal("ERR LIMIT can't be negative")
	errMaxlenNeg     = backends.Refusal("ERR MAXLEN can't be negative")
	errRankZero      = backends.Refusal("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
	errCursor        = backends.Refusal("ERR invalid cursor")
	errTimeout       = backends.Refusal("ERR timeout is not a float or out of range")
	errTimeoutNeg    = backends.Refusal("ERR timeout is negative")
	errWeight        = backends.Refusal("ERR weight value is not a float")
	errMinMaxFloat   = backends.Refusal("ERR min or max is not a float")
	errMinMaxLex     = backends.Refusal("ERR min or max not valid string range item")

	// Options that do not go together.
	errZAddXXNX     = backends.Refusal("ERR XX and NX options at the same time are not compatible")
	errZAddGTLTNX   = backends.Refusal("ERR GT, LT, and/or NX options at the same time are not compatible")
	errZAddIncrPair = backends.Refusal("ERR INCR option supports a single increment-element pair")
	errRangeLimit   = backends.Refusal("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	errRangeScores  = backends.Refusal("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	errSortBy       = backends.Refusal("ERR BY option of SORT denied in Cluster mode.")
	errSortGet      = backends.Refusal("ERR GET option of SORT denied in Cluster mode.")

	// What a run finds in the values.
	errHashNotFloat = backends.Refusal("ERR hash value is not a float")
	errIncrNaN      = backends.Refusal("ERR value is NaN or Infinity")
	errResultNaN    = backends.Refusal("ERR increment would produce NaN or Infinity")
	errSortNotFloat = backends.Refusal("ERR One or more scores can't be converted into double")
	errHashNotInt   = backends.Refusal("ERR hash value is not an integer")
	errIncrOverflow = backends.Refusal("ERR increment or decrement would overflow")
	errNaNScore     = backends.Refusal("ERR resulting score is not a number (NaN)") // ZADD INCR or ZINCRBY of inf by -inf
)

// The errors of LSET, which a store doing it itself (PostgreSQL) answers
// as Run would.
const (
	// ErrNoSuchKey: LSET of a key that does not exist.
	ErrNoSuchKey = backends.Refusal("ERR no such key")
	// ErrIndexRange: LSET past either end.
	ErrIndexRange = backends.Refusal("ERR index out of range")
)

// arityError is Redis's error for a wrong number of arguments, for the
// commands whose arity depends on their options.
func arityError(name []byte) error {
	return backends.Refusal("ERR wrong number of arguments for '" + lower(name) + "' command")
}

// unknownCommand is Redis's error for a command it does not have: a
// parser of several commands given another's name.
func unknownCommand(name []byte) error {
	return backends.Refusal("ERR unknown command '" + lower(name) + "'")
}

// errNoInputKey is ZUNION's and the others' for a numkeys below 1.
func errNoInputKey(name string) error {
	return backends.Refusal("ERR at least 1 input key is needed for '" + name + "' command")
}
