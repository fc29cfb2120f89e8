package coll

// Spec is one command on collections as the RESP front's command table
// takes it: its name, the parser that makes its Op, Redis 7.0's arity
// (negative: at least), whether it may write, and its keys as COMMAND
// reports them (first, last — negative from the end —, step; Movable:
// the parser finds them, from a numkeys argument). Small, when set, says
// whether a request's reply is bounded by the request, not by the value
// (no range, no count): a pipelined run of such requests on one key may
// hold its results until it is answered (the RESP front's group.go).
type Spec struct {
	Name              string
	Parse             Parser
	Arity             int
	Write             bool
	First, Last, Step int
	Movable, Blocking bool
	Small             func(args [][]byte) bool
}

// always and noCount are Spec.Small: every request, or one without its
// optional count (LPOP key, not LPOP key 100).
func always([][]byte) bool       { return true }
func noCount(args [][]byte) bool { return len(args) == 2 }

// Commands are every command on collections, by type. Adding one is an Op
// and a line here.
var Commands = []Spec{
	// hashes
	{Name: "hset", Parse: ParseHSet, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hmset", Parse: ParseHSet, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hsetnx", Parse: ParseHSetNX, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hget", Parse: ParseHGet, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hmget", Parse: ParseHMGet, Arity: -3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hdel", Parse: ParseHDel, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hexists", Parse: ParseHExists, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hlen", Parse: ParseHLen, Arity: 2, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hstrlen", Parse: ParseHGet, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hkeys", Parse: ParseHGetAll, Arity: 2, First: 1, Last: 1, Step: 1},
	{Name: "hvals", Parse: ParseHGetAll, Arity: 2, First: 1, Last: 1, Step: 1},
	{Name: "hgetall", Parse: ParseHGetAll, Arity: 2, First: 1, Last: 1, Step: 1},
	{Name: "hincrby", Parse: ParseHIncrBy, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hincrbyfloat", Parse: ParseHIncrByFloat, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "hrandfield", Parse: ParseHRandField, Arity: -2, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "hscan", Parse: ParseHScan, Arity: -3, First: 1, Last: 1, Step: 1},

	// sets
	{Name: "sadd", Parse: ParseSAdd, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "srem", Parse: ParseSRem, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "smembers", Parse: ParseSMembers, Arity: 2, First: 1, Last: 1, Step: 1},
	{Name: "sismember", Parse: ParseSIsMember, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "smismember", Parse: ParseSIsMember, Arity: -3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "scard", Parse: ParseSCard, Arity: 2, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "spop", Parse: ParseSPop, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "srandmember", Parse: ParseSRandMember, Arity: -2, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "smove", Parse: ParseSMove, Arity: 4, Write: true, First: 1, Last: 2, Step: 1},
	{Name: "sinter", Parse: ParseSetOp, Arity: -2, First: 1, Last: -1, Step: 1},
	{Name: "sintercard", Parse: ParseSetOp, Arity: -3, Movable: true},
	{Name: "sinterstore", Parse: ParseSetOp, Arity: -3, Write: true, First: 1, Last: -1, Step: 1},
	{Name: "sunion", Parse: ParseSetOp, Arity: -2, First: 1, Last: -1, Step: 1},
	{Name: "sunionstore", Parse: ParseSetOp, Arity: -3, Write: true, First: 1, Last: -1, Step: 1},
	{Name: "sdiff", Parse: ParseSetOp, Arity: -2, First: 1, Last: -1, Step: 1},
	{Name: "sdiffstore", Parse: ParseSetOp, Arity: -3, Write: true, First: 1, Last: -1, Step: 1},
	{Name: "sscan", Parse: ParseSScan, Arity: -3, First: 1, Last: 1, Step: 1},

	// sorted sets
	{Name: "zadd", Parse: ParseZAdd, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zincrby", Parse: ParseZAdd, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zrem", Parse: ParseZRem, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zcard", Parse: ParseZCard, Arity: 2, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zscore", Parse: ParseZScore, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zmscore", Parse: ParseZMScore, Arity: -3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zrank", Parse: ParseZRank, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zrevrank", Parse: ParseZRank, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zcount", Parse: ParseZCount, Arity: 4, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zlexcount", Parse: ParseZLexCount, Arity: 4, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zrange", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zrangestore", Parse: ParseZRange, Arity: -5, Write: true, First: 1, Last: 2, Step: 1},
	{Name: "zrevrange", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zrangebyscore", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zrevrangebyscore", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zrangebylex", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zrevrangebylex", Parse: ParseZRange, Arity: -4, First: 1, Last: 1, Step: 1},
	{Name: "zremrangebyrank", Parse: ParseZRemRange, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zremrangebyscore", Parse: ParseZRemRange, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zremrangebylex", Parse: ParseZRemRange, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "zpopmin", Parse: ParseZPop, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "zpopmax", Parse: ParseZPop, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "zmpop", Parse: ParseZMPop, Arity: -4, Write: true, Movable: true},
	{Name: "bzmpop", Parse: ParseBZMPop, Arity: -5, Write: true, Movable: true, Blocking: true},
	{Name: "bzpopmin", Parse: ParseBZPop, Arity: -3, Write: true, First: 1, Last: -2, Step: 1, Blocking: true},
	{Name: "bzpopmax", Parse: ParseBZPop, Arity: -3, Write: true, First: 1, Last: -2, Step: 1, Blocking: true},
	{Name: "zrandmember", Parse: ParseZRandMember, Arity: -2, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "zscan", Parse: ParseZScan, Arity: -3, First: 1, Last: 1, Step: 1},
	{Name: "zunion", Parse: ParseZSetOp, Arity: -3, Movable: true},
	{Name: "zinter", Parse: ParseZSetOp, Arity: -3, Movable: true},
	{Name: "zdiff", Parse: ParseZSetOp, Arity: -3, Movable: true},
	{Name: "zintercard", Parse: ParseZSetOp, Arity: -3, Movable: true},
	{Name: "zunionstore", Parse: ParseZSetOp, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Movable: true},
	{Name: "zinterstore", Parse: ParseZSetOp, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Movable: true},
	{Name: "zdiffstore", Parse: ParseZSetOp, Arity: -4, Write: true, First: 1, Last: 1, Step: 1, Movable: true},

	// lists
	{Name: "lpush", Parse: ParseLPush, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "rpush", Parse: ParseRPush, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lpushx", Parse: ParseLPushX, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "rpushx", Parse: ParseRPushX, Arity: -3, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lpop", Parse: ParseLPop, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "rpop", Parse: ParseRPop, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Small: noCount},
	{Name: "llen", Parse: ParseLLen, Arity: 2, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lrange", Parse: ParseLRange, Arity: 4, First: 1, Last: 1, Step: 1},
	{Name: "lindex", Parse: ParseLIndex, Arity: 3, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lset", Parse: ParseLSet, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "linsert", Parse: ParseLInsert, Arity: 5, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lrem", Parse: ParseLRem, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "ltrim", Parse: ParseLTrim, Arity: 4, Write: true, First: 1, Last: 1, Step: 1, Small: always},
	{Name: "lpos", Parse: ParseLPos, Arity: -3, First: 1, Last: 1, Step: 1},
	{Name: "lmove", Parse: ParseLMove, Arity: 5, Write: true, First: 1, Last: 2, Step: 1},
	{Name: "rpoplpush", Parse: ParseRPopLPush, Arity: 3, Write: true, First: 1, Last: 2, Step: 1},
	{Name: "lmpop", Parse: ParseLMPop, Arity: -4, Write: true, Movable: true},
	{Name: "blpop", Parse: ParseBLPop, Arity: -3, Write: true, First: 1, Last: -2, Step: 1, Blocking: true},
	{Name: "brpop", Parse: ParseBRPop, Arity: -3, Write: true, First: 1, Last: -2, Step: 1, Blocking: true},
	{Name: "blmove", Parse: ParseBLMove, Arity: 6, Write: true, First: 1, Last: 2, Step: 1, Blocking: true},
	{Name: "brpoplpush", Parse: ParseBRPopLPush, Arity: 4, Write: true, First: 1, Last: 2, Step: 1, Blocking: true},
	{Name: "blmpop", Parse: ParseBLMPop, Arity: -5, Write: true, Movable: true, Blocking: true},

	// lists, sets and sorted sets
	{Name: "sort", Parse: ParseSort, Arity: -2, Write: true, First: 1, Last: 1, Step: 1, Movable: true},
	{Name: "sort_ro", Parse: ParseSortRO, Arity: -2, First: 1, Last: 1, Step: 1},
}
