// Package coll holds Redis's collections in memory — Hash, Set, ZSet and
// List — and the commands on them, each an Op (backends.Op) written once:
// Parse<Command> reads a request's arguments into an Op, Run does the
// command on values in memory, Reply writes the result as Redis does.
//
// Stores run an Op as backends.Do says: the memory route, an L1 tier and
// an atomic run's scratch store call Run on the values they hold;
// PostgreSQL recognises the Ops it has statements for and runs Run on the
// values it read for the rest; Valkey passes the request on (Passed).
//
// Each type keeps Redis's complexity where Redis documents one: a hash, a
// set and a sorted set find a member in O(1) (a Go map), a sorted set
// ranks and ranges in O(log N) (a skip list with spans), a list pushes and
// pops at both ends in O(1) and indexes in O(1) (a ring buffer). The
// encodings OBJECT ENCODING reports (listpack, intset, hashtable,
// skiplist, quicklist) are Redis 7.0's, read from a value's size and the
// thresholds in Limits.
//
// What Redis's answers must be, byte for byte, comes from Redis 7.0's
// documentation and its source (src/t_hash.c, t_set.c, t_zset.c, t_list.c),
// facts taken, code not copied.
package coll
