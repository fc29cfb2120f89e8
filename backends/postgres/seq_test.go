package postgres

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// seqOf parses lines into Ops, and errs for them.
func seqOf(t *testing.T, lines ...[][]byte) ([]coll.Command, []backends.Op, []error) {
	t.Helper()
	cmds, ops := make([]coll.Command, len(lines)), make([]backends.Op, len(lines))
	for i, args := range lines {
		cmd, err := nativeParsers[strings.ToLower(string(args[0]))](args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		cmds[i], ops[i] = cmd, cmd
	}
	return cmds, ops, make([]error, len(lines))
}

// A run of pipelined writes on one key is one transaction: every element
// of sixteen LPUSHes was inserted by the same one, where sixteen Dos
// commit sixteen.
func TestSeqIsOneTransaction(t *testing.T) {
	kv := openKV(t, newDriver(t, Options{}), uniqueTable(t), "async", "")
	ctx := testCtx(t)
	xacts := func(key string) int64 {
		return queryInt(t, fmt.Sprintf("SELECT count(DISTINCT xmin::text) FROM %s WHERE key = $1", itemsTable(kv.table).ident()), key)
	}
	args := make([][][]byte, 16)
	for i := range args {
		args[i] = [][]byte{[]byte("LPUSH"), []byte("run"), strconv.AppendInt(nil, int64(i), 10)}
	}
	cmds, ops, errs := seqOf(t, args...)
	if err := kv.DoSeq(ctx, "run", ops, errs); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if errs[i] != nil || cmd.(*coll.Push).Len != int64(i+1) {
			t.Fatalf("LPUSH %d in the run: length %d, %v", i, cmd.(*coll.Push).Len, errs[i])
		}
	}
	if n := xacts("run"); n != 1 {
		t.Errorf("sixteen LPUSHes in a run were inserted by %d transactions, want 1", n)
	}

	_, alone, _ := seqOf(t, args...)
	for _, op := range alone {
		if err := kv.Do(ctx, []string{"alone"}, op); err != nil {
			t.Fatal(err)
		}
	}
	if n := xacts("alone"); n != 16 {
		t.Errorf("sixteen LPUSHes alone were inserted by %d transactions, want 16", n)
	}
}

// A statement of the batch that PostgreSQL refuses (a member over the
// index's row size) fails its own op alone: the others of the run are
// written and answered as they are alone.
func TestSeqRefusedStatementFailsAlone(t *testing.T) {
	kv := openKV(t, newDriver(t, Options{}), uniqueTable(t), "async", "")
	ctx := testCtx(t)
	big := make([]byte, 12_000)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	cmds, ops, errs := seqOf(t,
		[][]byte{[]byte("SADD"), []byte("s"), []byte("a")},
		[][]byte{[]byte("SADD"), []byte("s"), big},
		[][]byte{[]byte("SADD"), []byte("s"), []byte("b"), []byte("a")},
	)
	if err := kv.DoSeq(ctx, "s", ops, errs); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || cmds[0].(*coll.SAdd).Added != 1 {
		t.Errorf("SADD s a: added %d, %v; want 1", cmds[0].(*coll.SAdd).Added, errs[0])
	}
	if errs[1] == nil || sqlState(errs[1]) == "" {
		t.Errorf("SADD of a 12,000-byte member: %v, want PostgreSQL's refusal", errs[1])
	}
	if errs[2] != nil || cmds[2].(*coll.SAdd).Added != 1 {
		t.Errorf("SADD s b a: added %d, %v; want 1", cmds[2].(*coll.SAdd).Added, errs[2])
	}
	card, _, _ := seqOf(t, [][]byte{[]byte("SCARD"), []byte("s")})
	if err := kv.Do(ctx, []string{"s"}, card[0]); err != nil || card[0].(*coll.Len).Len != 2 {
		t.Errorf("SCARD s after the run: %d, %v; want 2", card[0].(*coll.Len).Len, err)
	}
}
