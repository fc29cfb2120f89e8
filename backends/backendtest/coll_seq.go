package backendtest

import (
	"bytes"
	"cmp"
	"fmt"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// seqRuns are runs of requests on one key (%s), each as a client would
// pipeline them: errors in the middle, a value emptied and made again.
var seqRuns = [][]string{
	{"RPUSH %s a b c", "LPOP %s", "LSET %s 9 x", "LLEN %s", "RPUSH %s d", "LRANGE %s 0 -1",
		"LTRIM %s 1 1", "LPOP %s 5", "LLEN %s", "RPUSH %s e", "LINDEX %s 0"},
	{"HSET %s f v", "HINCRBY %s f 1", "HSET %s n 1", "HINCRBY %s n 2", "HDEL %s f", "HGETALL %s",
		"HDEL %s n", "HLEN %s", "HSETNX %s z 9", "HGET %s z"},
	{"ZADD %s 1 a 2 b", "ZINCRBY %s 1 a", "ZADD %s NX 5 a", "ZPOPMIN %s", "ZRANGE %s 0 -1 WITHSCORES",
		"ZREM %s a b", "ZCARD %s", "ZADD %s 3 c", "ZSCORE %s c"},
	{"SADD %s x y", "SISMEMBER %s x", "SREM %s x y", "SCARD %s", "SADD %s z", "SMEMBERS %s"},
	// Runs of the writes clients pipeline most, which a store may send as
	// one batch: the key emptied, made again, and refused in the middle.
	{"RPUSH %s a", "RPUSH %s b c", "LPOP %s", "LPOP %s 5", "LPOP %s", "RPOP %s 2", "LPUSHX %s x",
		"RPUSH %s d", "LPUSHX %s e", "RPOP %s", "SADD %s m", "LPOP %s"},
	{"SADD %s a b", "SADD %s b c", "SREM %s a b c", "SREM %s a", "SADD %s d", "HSET %s f v", "SREM %s d x"},
	{"HSET %s f 1 g 2", "HSETNX %s f 9", "HSETNX %s h 3", "HDEL %s f g h", "HSETNX %s f 1",
		"HSET %s f 1 f 2", "HDEL %s x", "HDEL %s f"},
	{"ZADD %s 1 a 2 b", "ZADD %s XX 5 a", "ZADD %s NX 7 a 8 c", "ZADD %s GT CH 1 a 9 b", "ZPOPMIN %s",
		"ZPOPMAX %s 5", "ZPOPMIN %s", "ZADD %s XX 1 a", "ZADD %s 1 z", "ZREM %s z"},
	{"LPUSH %s x", "HGET %s f", "SADD %s m"}, // on a string: every one WRONGTYPE
}

// testCollSeq: a run of requests on one key through a Sequencer (the
// store's, or the route wrapper's over any store) answers each as Do alone
// does, errors included, and leaves the key as they do. A store that is
// no Sequencer has nothing to check here.
func testCollSeq(t *testing.T, b backends.Backend) {
	sq, ok := b.(backends.Sequencer)
	if !ok {
		return
	}
	st := &storeTarget{b: b}
	for i, run := range seqRuns {
		for _, proto := range []int{2, 3} {
			alone, seq := tagged(t, fmt.Sprintf("alone%d.%d", i, proto)), tagged(t, fmt.Sprintf("seq%d.%d", i, proto))
			if i == len(seqRuns)-1 {
				set(t, b, alone, "v", backends.SetOptions{})
				set(t, b, seq, "v", backends.SetOptions{})
			}
			want := make([][]byte, len(run))
			ops := make([]backends.Op, len(run))
			cmds := make([]coll.Command, len(run))
			for j, line := range run {
				want[j] = st.do(t, proto, coll.Args(fmt.Sprintf(line, alone)))
				cmds[j] = parse(t, coll.Args(fmt.Sprintf(line, seq)))
				cmds[j].Request().RESP = proto
				ops[j] = cmds[j]
			}
			errs := make([]error, len(run))
			err := sq.DoSeq(ctx(t), seq, ops, errs)
			for j, op := range cmds {
				if got := render(proto, op, cmp.Or(err, errs[j])); !bytes.Equal(got, want[j]) {
					t.Errorf("RESP%d run %d, %s: %q in a run, %q alone", proto, i, run[j], got, want[j])
				}
			}
			for _, dump := range []string{"TYPE %s", "LRANGE %s 0 -1", "HGETALL %s", "ZRANGE %s 0 -1 WITHSCORES", "SMEMBERS %s"} {
				a := st.do(t, proto, coll.Args(fmt.Sprintf(dump, alone)))
				s := st.do(t, proto, coll.Args(fmt.Sprintf(dump, seq)))
				if !bytes.Equal(a, s) {
					t.Errorf("RESP%d run %d: after it %s = %q, after each alone %q", proto, i, dump, s, a)
				}
			}
		}
	}
}
