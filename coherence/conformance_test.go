package coherence

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/route"
)

// TestConformance runs the Backend contract through an L1 tier over a kv
// table, and through a route's instrumented wrapper over that tier, as
// server builds a route with an l1: reads served from L1 and writes
// through it answer as the table alone does.
func TestConformance(t *testing.T) {
	a := newInstance(t, "conformance_kv")
	t.Run("tier", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return unclosed{a.tier} }, backendtest.EncodingFromSize())
	})
	t.Run("route", func(t *testing.T) {
		tab, err := route.NewTable([]*route.Route{{Name: "kv", Backend: unclosed{a.tier}, BackendName: "pg"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Run(t, func(t *testing.T) backends.Backend { return tab.ByName("kv").Backend }, backendtest.EncodingFromSize())
		backendtest.RunAtomic(t, func(t *testing.T) backends.Backend { return tab.ByName("kv").Backend })
	})
	t.Run("tier-atomic", func(t *testing.T) {
		backendtest.RunAtomic(t, func(t *testing.T) backends.Backend { return unclosed{a.tier} })
	})
}

// unclosed leaves closing the tier to its instance.
type unclosed struct{ backends.Backend }

func (unclosed) Close() error { return nil }

// Unwrap lets backends.As find the tier's capabilities.
func (u unclosed) Unwrap() backends.Backend { return u.Backend }

// TestConformanceReadsFromL1: the tier serves a collection's reads from
// L1, so the conformance runs above read collections there, not only
// through to PostgreSQL; a write through the tier drops its copy.
func TestConformanceReadsFromL1(t *testing.T) {
	a := newInstance(t, "conformance_l1")
	ctx := context.Background()
	do := func(words ...string) coll.Command {
		t.Helper()
		args := make([][]byte, len(words))
		for i, w := range words {
			args[i] = []byte(w)
		}
		var op coll.Command
		var err error
		switch words[0] {
		case "hset":
			op, err = coll.ParseHSet(args)
		case "hget":
			op, err = coll.ParseHGet(args)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := a.tier.Do(ctx, []string{words[1]}, op); err != nil {
			t.Fatal(err)
		}
		return op
	}
	hget := func(want string) {
		t.Helper()
		var r bulkReply
		do("hget", "h", "f").Reply(&r)
		if r.bulk != want {
			t.Fatalf("HGET h f = %q, want %q", r.bulk, want)
		}
	}
	do("hset", "h", "f", "1")
	// The write's own fence, when it comes, drops what a read filled
	// before it: a later read fills again, and the one after it hits.
	hits := a.tier.Stats.Hits.Load()
	for deadline := time.Now().Add(10 * time.Second); a.tier.Stats.Hits.Load() == hits; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no HGET of the hash was served from L1 within 10s")
		}
		hget("1")
	}
	do("hset", "h", "f", "2")
	hget("2")
}

// A collection this tier writes as often as it reads it is read from the
// backend, never loaded whole after each write; read without writes, it is
// loaded and then served from L1.
func TestCollectionWrittenIsReadFromBackend(t *testing.T) {
	a := newInstance(t, "coll_written")
	run := func(op coll.Command, err error) coll.Command {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.tier.Do(context.Background(), []string{"h"}, op); err != nil {
			t.Fatal(err)
		}
		return op
	}
	hget := func() string {
		var r bulkReply
		run(coll.ParseHGet(coll.Args("hget h f"))).Reply(&r)
		return r.bulk
	}
	fills := a.tier.Stats.FillsStored.Load()
	for i := range 20 {
		v := fmt.Sprint(i)
		run(coll.ParseHSet(coll.Args("hset h f " + v)))
		if got := hget(); got != v {
			t.Fatalf("HGET after HSET %s = %q", v, got)
		}
	}
	if n := a.tier.Stats.FillsStored.Load() - fills; n != 0 {
		t.Fatalf("%d fills while every read followed a write, want 0", n)
	}
	hits := a.tier.Stats.Hits.Load()
	for deadline := time.Now().Add(10 * time.Second); a.tier.Stats.Hits.Load() == hits; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no HGET of the hash was served from L1 within 10s of the last write")
		}
		if got := hget(); got != "19" {
			t.Fatalf("HGET = %q, want 19", got)
		}
	}
}

// bulkReply keeps a reply's bulk.
type bulkReply struct{ bulk string }

func (r *bulkReply) RESP3() bool    { return false }
func (r *bulkReply) Int(int64)      {}
func (r *bulkReply) Bulk(b []byte)  { r.bulk = string(b) }
func (r *bulkReply) Status(string)  {}
func (r *bulkReply) Null()          {}
func (r *bulkReply) NullArray()     {}
func (r *bulkReply) Array(int)      {}
func (r *bulkReply) Map(int)        {}
func (r *bulkReply) Set(int)        {}
func (r *bulkReply) Double(float64) {}

// A run of writes through the tier (DoSeq) drops the L1's copy of the key,
// as one write does: the read after it sees the run's last write.
func TestSeqFencesOnce(t *testing.T) {
	a := newInstance(t, "coll_seq")
	ctx := context.Background()
	parse := func(p coll.Parser, line string) coll.Command {
		t.Helper()
		op, err := p(coll.Args(line))
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	hget := func() string {
		t.Helper()
		op := parse(coll.ParseHGet, "hget h f")
		if err := a.tier.Do(ctx, []string{"h"}, op); err != nil {
			t.Fatal(err)
		}
		var r bulkReply
		op.Reply(&r)
		return r.bulk
	}
	if err := a.tier.Do(ctx, []string{"h"}, parse(coll.ParseHSet, "hset h f 0")); err != nil {
		t.Fatal(err)
	}
	hits := a.tier.Stats.Hits.Load()
	for deadline := time.Now().Add(10 * time.Second); a.tier.Stats.Hits.Load() == hits; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no HGET of the hash was served from L1 within 10s")
		}
		if got := hget(); got != "0" {
			t.Fatalf("HGET = %q, want 0", got)
		}
	}
	ops := []backends.Op{parse(coll.ParseHSet, "hset h f 1"), parse(coll.ParseHSet, "hset h f 2 g 2"),
		parse(coll.ParseHDel, "hdel h g")}
	errs := make([]error, len(ops))
	if err := a.tier.DoSeq(ctx, "h", ops, errs); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if got := hget(); got != "2" {
		t.Fatalf("HGET after a run of HSETs = %q, want 2", got)
	}
}
