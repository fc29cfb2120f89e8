package valkey

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/internal/testenv"
)

// txDo runs a command line (parsed by p; its key is args[1]) in a run.
func txDo(t testing.TB, ctx context.Context, tx backends.Backend, p coll.Parser, args ...string) (coll.Command, error) {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	op, err := p(b)
	if err != nil {
		t.Fatal(err)
	}
	return op, tx.Do(ctx, []string{args[1]}, op)
}

// hdel removes fields of a hash (a run's Op: package coll has no HDEL yet).
type hdel []string

func (hdel) Name() string            { return "hdel" }
func (hdel) Writes() backends.Writes { return backends.WritesAll }
func (fs hdel) Run(v backends.View) error {
	h, err := v.Get(0, backends.TypeHash)
	if h == nil || err != nil {
		return err
	}
	for _, f := range fs {
		h.(*coll.Hash).Del(f, &coll.DefaultLimits)
	}
	return nil
}

// putHash makes the key a new hash of pairs, whatever it held, as
// SINTERSTORE does to its destination.
type putHash []string

func (putHash) Name() string            { return "puthash" }
func (putHash) Writes() backends.Writes { return backends.WritesAll }
func (p putHash) Run(v backends.View) error {
	h := coll.NewHash()
	for i := 0; i < len(p); i += 2 {
		h.Set(p[i], []byte(p[i+1]))
	}
	v.Put(0, h)
	return nil
}

// monitor records the commands the server runs (MONITOR), each as its
// arguments joined by spaces.
type monitor struct {
	raw *rawConn
	srv *testenv.Redis
	n   int
}

func startMonitor(t testing.TB, srv *testenv.Redis) *monitor {
	t.Helper()
	m := &monitor{raw: dialRaw(t, srv, 2), srv: srv}
	if got := m.raw.do(t, "MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	return m
}

// since returns the commands run since the last call (or the start) that
// name one of keys, in order, MULTI and EXEC included.
func (m *monitor) since(t testing.TB, keys ...string) []string {
	t.Helper()
	m.n++
	marker := fmt.Sprintf("monitor-mark-%d", m.n)
	if _, err := m.srv.Do(context.Background(), "ECHO", marker); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for {
		m.raw.c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := m.raw.r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v (so far %q)", err, cmds)
		}
		_, args, ok := strings.Cut(strings.TrimSpace(line), "] ")
		if !ok {
			continue
		}
		if strings.Contains(args, marker) {
			return cmds
		}
		words := strings.Fields(strings.ReplaceAll(args, `"`, ""))
		switch {
		case words[0] == "MULTI" || words[0] == "EXEC":
			cmds = append(cmds, words[0])
		case len(words) > 1 && slices.Contains(keys, words[1]):
			cmds = append(cmds, strings.Join(words, " "))
		}
	}
}

// hgetall is a hash on the server, as "f=v" sorted.
func hgetall(t testing.TB, srv *testenv.Redis, key string) []string {
	t.Helper()
	got, err := srv.Do(context.Background(), "HGETALL", key)
	if err != nil {
		t.Fatal(err)
	}
	if got == "" {
		return nil
	}
	l := strings.Split(got, "\n")
	var out []string
	for i := 0; i+1 < len(l); i += 2 {
		out = append(out, l[i]+"="+l[i+1])
	}
	slices.Sort(out)
	return out
}

func pttl(t testing.TB, srv *testenv.Redis, key string) time.Duration {
	t.Helper()
	got, err := srv.Do(context.Background(), "PTTL", key)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := strconv.Atoi(got)
	return time.Duration(ms) * time.Millisecond
}

func srvDo(t testing.TB, srv *testenv.Redis, args ...string) string {
	t.Helper()
	got, err := srv.Do(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return got
}

// TestAtomicHashJournal: a run that changes a loaded hash in place writes
// back, in its MULTI/EXEC, the fields it touched and only those (HSET of
// those it set, HDEL of those it removed), and the hash keeps its lifetime.
func TestAtomicHashJournal(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	k := s.key("h")
	srvDo(t, server, "HSET", k, "a", "1", "b", "2", "c", "3")
	srvDo(t, server, "PEXPIRE", k, "100000")
	mon := startMonitor(t, server)
	var read string
	err := s.Atomically(ctx, []string{"h"}, func(tx backends.Backend) error {
		op, err := txDo(t, ctx, tx, coll.ParseHGet, "hget", "h", "a")
		if err != nil {
			return err
		}
		op.Reply(&replyWriter{s: &read})
		if _, err := txDo(t, ctx, tx, coll.ParseHSet, "hset", "h", "b", "20", "d", "4"); err != nil {
			return err
		}
		return tx.Do(ctx, []string{"h"}, hdel{"c"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if read != "1" {
		t.Errorf("the run read a = %q, want 1", read)
	}
	cmds := mon.since(t, k)
	writes := cmds[slices.Index(cmds, "MULTI")+1 : slices.Index(cmds, "EXEC")]
	if len(writes) != 2 || !slices.Contains([]string{"HSET " + k + " b 20 d 4", "HSET " + k + " d 4 b 20"}, writes[0]) ||
		writes[1] != "HDEL "+k+" c" {
		t.Errorf("write-back = %q, want HSET of b and d, then HDEL of c", writes)
	}
	if got := hgetall(t, server, k); !slices.Equal(got, []string{"a=1", "b=20", "d=4"}) {
		t.Errorf("h = %v", got)
	}
	if d := pttl(t, server, k); d <= 90*time.Second || d > 100*time.Second {
		t.Errorf("h's lifetime = %v, want the 100s it had, less the run", d)
	}
}

// replyWriter collects a Bulk reply of a Command (the run's own HGET).
type replyWriter struct{ s *string }

func (w *replyWriter) RESP3() bool      { return false }
func (w *replyWriter) Int(int64)        {}
func (w *replyWriter) Bulk(b []byte)    { *w.s = string(b) }
func (w *replyWriter) Status(string)    {}
func (w *replyWriter) Null()            { *w.s = "(nil)" }
func (w *replyWriter) NullArray()       {}
func (w *replyWriter) Array(int)        {}
func (w *replyWriter) Map(int)          {}
func (w *replyWriter) Set(int)          {}
func (w *replyWriter) Double(f float64) {}

// TestAtomicHashWhole: a hash the run made, or made to replace what the
// key held (a string, another hash), is written whole: DEL when there was
// something, then HSET of every field, with the lifetime the run left it
// (none: a replaced value has none).
func TestAtomicHashWhole(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	str, old, fresh := s.key("str"), s.key("old"), s.key("fresh")
	srvDo(t, server, "SET", str, "x", "PX", "100000")
	srvDo(t, server, "HSET", old, "gone", "1")
	mon := startMonitor(t, server)
	err := s.Atomically(ctx, []string{"str", "old", "fresh"}, func(tx backends.Backend) error {
		for _, k := range []string{"str", "old"} {
			if err := tx.Do(ctx, []string{k}, putHash{"p", "1", "q", "2"}); err != nil {
				return err
			}
		}
		_, err := txDo(t, ctx, tx, coll.ParseHSet, "hset", "fresh", "x", "y")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cmds := mon.since(t, str, old, fresh)
	writes := cmds[slices.Index(cmds, "MULTI")+1 : slices.Index(cmds, "EXEC")]
	slices.Sort(writes)
	want := []string{"DEL " + old, "DEL " + str, "HSET " + fresh + " x y"}
	for _, k := range []string{old, str} {
		if !slices.Contains(writes, "HSET "+k+" p 1 q 2") && !slices.Contains(writes, "HSET "+k+" q 2 p 1") {
			t.Errorf("no HSET of %s's fields in %q", k, writes)
		}
	}
	for _, w := range want {
		if !slices.Contains(writes, w) {
			t.Errorf("no %q in %q", w, writes)
		}
	}
	if len(writes) != 5 {
		t.Errorf("write-back = %q, want 5 commands", writes)
	}
	for _, k := range []string{str, old} {
		if got := hgetall(t, server, k); !slices.Equal(got, []string{"p=1", "q=2"}) {
			t.Errorf("%s = %v, want p=1 q=2", k, got)
		}
		if d := pttl(t, server, k); d != -time.Millisecond {
			t.Errorf("%s's lifetime = %v, want none", k, d)
		}
	}
	if got := hgetall(t, server, fresh); !slices.Equal(got, []string{"x=y"}) {
		t.Errorf("fresh = %v", got)
	}
}

// TestAtomicHashLifetime: a run that changes only a hash's lifetime sends
// PEXPIRE alone; one that changes fields and the lifetime sends both; one
// that empties the hash deletes the key; one that only reads writes
// nothing.
func TestAtomicHashLifetime(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	k := s.key("h")
	srvDo(t, server, "HSET", k, "a", "1", "b", "2")
	mon := startMonitor(t, server)
	expire := func(tx backends.Backend) error {
		_, err := backends.DoExpire(ctx, tx, "h", backends.TTL{Mode: backends.TTLRelative, D: 50 * time.Second}, backends.ExpireAlways)
		return err
	}
	for _, tc := range []struct {
		name string
		fn   func(tx backends.Backend) error
		want []string
	}{
		{"expire", expire, []string{"PEXPIRE " + k}},
		{"read", func(tx backends.Backend) error {
			_, err := txDo(t, ctx, tx, coll.ParseHGet, "hget", "h", "a")
			return err
		}, nil},
		{"set and persist", func(tx backends.Backend) error {
			if _, err := txDo(t, ctx, tx, coll.ParseHSet, "hset", "h", "a", "10"); err != nil {
				return err
			}
			_, err := backends.DoExpire(ctx, tx, "h", backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
			return err
		}, []string{"HSET " + k + " a 10", "PERSIST " + k}},
		{"empty", func(tx backends.Backend) error { return tx.Do(ctx, []string{"h"}, hdel{"a", "b"}) },
			[]string{"DEL " + k}},
	} {
		if err := s.Atomically(ctx, []string{"h"}, tc.fn); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cmds := mon.since(t, k)
		writes := cmds[slices.Index(cmds, "MULTI")+1 : slices.Index(cmds, "EXEC")]
		for i, w := range writes {
			if strings.HasPrefix(w, "PEXPIRE ") {
				writes[i] = "PEXPIRE " + k // its milliseconds vary
			}
		}
		if !slices.Equal(writes, tc.want) {
			t.Errorf("%s: write-back = %q, want %q", tc.name, writes, tc.want)
		}
		if tc.name == "expire" {
			if d := pttl(t, server, k); d <= 40*time.Second || d > 50*time.Second {
				t.Errorf("lifetime after the run = %v, want 50s", d)
			}
			if got := hgetall(t, server, k); !slices.Equal(got, []string{"a=1", "b=2"}) {
				t.Errorf("h after a lifetime change = %v", got)
			}
		}
	}
	if got := srvDo(t, server, "EXISTS", k); got != "0" {
		t.Errorf("h emptied by the run still exists")
	}
}

// TestAtomicHashConflict: a write of the hash by another client between
// the run's load and its EXEC aborts the EXEC; the run reads again, and
// the result holds both writes.
func TestAtomicHashConflict(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	k := s.key("h")
	srvDo(t, server, "HSET", k, "a", "1")
	var runs atomic.Int64
	err := s.Atomically(ctx, []string{"h"}, func(tx backends.Backend) error {
		if runs.Add(1) == 1 {
			srvDo(t, server, "HSET", k, "other", "x")
		}
		_, err := txDo(t, ctx, tx, coll.ParseHSet, "hset", "h", "mine", "y")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 2 {
		t.Errorf("fn ran %d times, want 2", runs.Load())
	}
	if got := hgetall(t, server, k); !slices.Equal(got, []string{"a=1", "mine=y", "other=x"}) {
		t.Errorf("h = %v, want both writes", got)
	}
}

// TestAtomicHashWatched: under CLIENT TRACKING a run's read of a hash is
// marked not watched: the client cache, which the server tracks, reads
// strings only.
func TestAtomicHashWatched(t *testing.T) {
	s := open(t, newDriver(t, server, cached(nil)))
	cancel := s.Notify(func(backends.Outside) {})
	defer cancel()
	srvDo(t, server, "HSET", s.key("h"), "a", "1")
	mustSet(t, s, "str", "v")
	for _, tc := range []struct {
		keys []string
		want bool
	}{{[]string{"str"}, false}, {[]string{"str", "h"}, true}} {
		ctx := ctxT(t)
		tok := s.ReadToken()
		err := s.Atomically(ctx, tc.keys, func(tx backends.Backend) error {
			for _, k := range tc.keys {
				if k == "h" {
					if _, err := txDo(t, ctx, tx, coll.ParseHGet, "hget", "h", "a"); err != nil {
						return err
					}
				} else if _, _, err := tx.Get(ctx, k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Unwatched("str", tok); got != tc.want {
			t.Errorf("run over %v: not watched = %v, want %v", tc.keys, got, tc.want)
		}
	}
}

// TestAtomicHashCluster: in a cluster, a run over hash-tagged keys holding
// a hash and a string loads and writes back both.
func TestAtomicHashCluster(t *testing.T) {
	s := open(t, newDriver(t, cluster, nil))
	ctx := ctxT(t)
	srvDo(t, cluster, "HSET", s.key("{u}h"), "n", "1")
	mustSet(t, s, "{u}s", "5")
	err := s.Atomically(ctx, []string{"{u}h", "{u}s"}, func(tx backends.Backend) error {
		if _, err := backends.DoIncrBy(ctx, tx, "{u}s", 1); err != nil {
			return err
		}
		_, err := txDo(t, ctx, tx, coll.ParseHSet, "hset", "{u}h", "n", "2")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := hgetall(t, cluster, s.key("{u}h")); !slices.Equal(got, []string{"n=2"}) {
		t.Errorf("{u}h = %v", got)
	}
	if v, _ := mustGet(t, s, "{u}s"); v != "6" {
		t.Errorf("{u}s = %q, want 6", v)
	}
}

// TestAtomicTypeChanges: while another client keeps changing a key from a
// string to a hash and back, runs over it load what fits together or read
// again (a load torn between its TYPE and its reads is never run on), and
// never fail for it. Probabilistic: it exercises the torn loads, whose
// EXEC the server aborts anyway.
func TestAtomicTypeChanges(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	k := s.key("k")
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	var writerErr atomic.Pointer[error]
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				_, err = server.Do(ctx, "SET", k, "x")
			} else if _, err = server.Do(ctx, "DEL", k); err == nil {
				_, err = server.Do(ctx, "HSET", k, "a", "1")
			}
			if err != nil {
				writerErr.Store(&err)
				return
			}
		}
	}()
	var runs, hashes, strs atomic.Int64
	for range 200 {
		err := s.Atomically(ctx, []string{"k"}, func(tx backends.Backend) error {
			runs.Add(1)
			v, ok, err := tx.Get(ctx, "k")
			switch {
			case err == nil && ok && string(v) == "x":
				strs.Add(1)
				return nil
			case err == nil && !ok:
				return nil
			case err != backends.ErrWrongType:
				return fmt.Errorf("GET k = %q, %v, %v", v, ok, err)
			}
			op, err := txDo(t, ctx, tx, coll.ParseHGet, "hget", "k", "a")
			if err != nil {
				return err
			}
			var got string
			op.Reply(&replyWriter{s: &got})
			if got != "1" {
				return fmt.Errorf("HGET k a = %q in a run, want 1", got)
			}
			hashes.Add(1)
			return nil
		})
		if err != nil {
			close(stop)
			<-writerDone
			t.Fatal(err)
		}
	}
	close(stop)
	<-writerDone
	if err := writerErr.Load(); err != nil {
		t.Fatal(*err)
	}
	t.Logf("200 runs: fn ran %d times, saw a string %d times and a hash %d times", runs.Load(), strs.Load(), hashes.Load())
}
