package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/script"
)

// TestWatchAbortedByAnotherClient: a write by another connection between
// WATCH and EXEC makes EXEC answer a null array, and nothing queued runs.
func TestWatchAbortedByAnotherClient(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	for _, step := range []struct {
		c    *rawClient
		cmd  []string
		want string
	}{
		{a, []string{"SET", "w", "1"}, "+OK\r\n"},
		{a, []string{"WATCH", "w"}, "+OK\r\n"},
		{b, []string{"SET", "w", "2"}, "+OK\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"SET", "w", "3"}, "+QUEUED\r\n"},
		{a, []string{"EXEC"}, "*-1\r\n"},
		{a, []string{"GET", "w"}, "$1\r\n2\r\n"},
		// No longer watched after EXEC: the same again runs.
		{b, []string{"SET", "w", "4"}, "+OK\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"SET", "w", "5"}, "+QUEUED\r\n"},
		{a, []string{"EXEC"}, "*1\r\n+OK\r\n"},
	} {
		if got := step.c.do(step.cmd...); got != step.want {
			t.Fatalf("%q: got %q, want %q", step.cmd, got, step.want)
		}
	}
}

// TestWatchCollections: WATCH of a hash, set, sorted set or list answers
// OK (it answered WRONGTYPE), EXEC runs when no one wrote it, and a write
// by another client, or a change of its type, aborts EXEC.
func TestWatchCollections(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	for _, k := range []struct{ key, create, write string }{
		{"h", "HSET h f v", "HSET h f w"},
		{"s", "SADD s a", "SADD s b"},
		{"z", "ZADD z 1 a", "ZADD z 2 a"},
		{"l", "RPUSH l a", "RPUSH l b"},
		{"t", "SADD t a", "SET t x"}, // a collection replaced by a string
		{"u", "SET u x", "SADD v a"}, // a string, left alone
	} {
		exec := func(write bool) string {
			t.Helper()
			if got := a.do("WATCH", k.key); got != "+OK\r\n" {
				t.Fatalf("WATCH %s: %q", k.key, got)
			}
			if write {
				b.do(strings.Fields(k.write)...)
			}
			a.do("MULTI")
			a.do("PING")
			return a.do("EXEC")
		}
		a.do(strings.Fields(k.create)...)
		if got := exec(false); got != "*1\r\n+PONG\r\n" {
			t.Errorf("%s unwritten: EXEC %q", k.key, got)
		}
		want := "*-1\r\n"
		if k.key == "u" {
			want = "*1\r\n+PONG\r\n"
		}
		if got := exec(true); got != want {
			t.Errorf("%s after %s: EXEC %q, want %q", k.key, k.write, got, want)
		}
	}
}

// TestExecIsolation moves units between two keys in MULTI/EXEC from
// several clients while others MGET both: no reader sees the sum change,
// and no unit is lost.
func TestExecIsolation(t *testing.T) {
	ts := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 8})
	defer rdb.Close()
	if err := rdb.MSet(ctx, "iso:a", "1000", "iso:b", "0").Err(); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var bad, reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				vals, err := rdb.MGet(ctx, "iso:a", "iso:b").Result()
				if err != nil {
					t.Error(err)
					return
				}
				x, _ := strconv.Atoi(vals[0].(string))
				y, _ := strconv.Atoi(vals[1].(string))
				if x+y != 1000 {
					bad.Add(1)
				}
				reads.Add(1)
			}
		})
	}
	var movers sync.WaitGroup
	for w := range 4 {
		movers.Go(func() {
			for i := range 200 {
				from, to := "iso:a", "iso:b"
				if (w+i)%2 == 1 {
					from, to = to, from
				}
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, from, 1)
					p.IncrBy(ctx, to, 1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	movers.Wait()
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d MGETs saw half a transaction", bad.Load(), reads.Load())
	}
	vals, err := rdb.MGet(ctx, "iso:a", "iso:b").Result()
	if err != nil {
		t.Fatal(err)
	}
	x, _ := strconv.Atoi(vals[0].(string))
	y, _ := strconv.Atoi(vals[1].(string))
	if x+y != 1000 || x != 1000 {
		t.Fatalf("after 800 moves, half each way: a=%d b=%d, want 1000 and 0", x, y)
	}
}

// TestGoRedisTransactions: go-redis's TxPipelined and Watch, which issue 17
// found failing and then dropping the connection.
func TestGoRedisTransactions(t *testing.T) {
	ts := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: proto})
		defer rdb.Close()
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "gtx", "1", 0)
			p.Incr(ctx, "gtx")
			p.Get(ctx, "gtx")
			return nil
		})
		if err != nil || len(cmds) != 3 || cmds[2].(*redis.StringCmd).Val() != "2" {
			t.Fatalf("RESP%d TxPipelined: %v, %v", proto, cmds, err)
		}
		// Watch: a transaction whose key another client wrote fails with TxFailedErr.
		err = rdb.Watch(ctx, func(tx *redis.Tx) error {
			if err := rdb.Set(ctx, "gtx", "other", 0).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "gtx", "mine", 0)
				return nil
			})
			return err
		}, "gtx")
		if !errors.Is(err, redis.TxFailedErr) {
			t.Fatalf("RESP%d: WATCH of a key written meanwhile: %v, want TxFailedErr", proto, err)
		}
		if v := rdb.Get(ctx, "gtx").Val(); v != "other" {
			t.Fatalf("RESP%d: after the aborted transaction gtx = %q", proto, v)
		}
	}
}

// TestBusyScript: a script that loops forever holds its key; past the busy
// threshold a client that needs the key gets -BUSY, keys of other routes
// are served, and SCRIPT KILL stops the script.
func TestBusyScript(t *testing.T) {
	ts := startServer(t, Config{})
	ts.setBusyThreshold(100 * time.Millisecond)
	looping, other, killer := dial(t, ts.addr), dial(t, ts.addr), dial(t, ts.addr)
	if got := killer.do("SCRIPT", "KILL"); !strings.HasPrefix(got, "-NOTBUSY") {
		t.Fatalf("SCRIPT KILL with nothing running = %q", got)
	}
	done := make(chan string, 1)
	go func() {
		done <- looping.do("EVAL", "local n = redis.call('get', KEYS[1]); while true do end", "1", "busykey")
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := other.do("GET", "busykey")
		if got == "-"+script.ErrBusyEval+"\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET of a busy script's key: %q, never -BUSY", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := other.do("SET", "pg:elsewhere", "v"); got != "+OK\r\n" {
		t.Fatalf("SET on another route during a busy script = %q", got)
	}
	if got := scriptKill(t, killer); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	if got := <-done; !strings.Contains(got, "Script killed by user with SCRIPT KILL") {
		t.Fatalf("the killed script's reply = %q", got)
	}
	if got := other.do("GET", "busykey"); got != "$-1\r\n" {
		t.Fatalf("GET after the kill = %q", got)
	}
}

// scriptKill sends SCRIPT KILL until the engine sees a busy script. A
// client waiting for a script's key is answered -BUSY once the key has been
// held for the busy threshold, and the engine counts from the script's
// start, a little later (after the lock, the script's compilation): a
// SCRIPT KILL sent right after that -BUSY may find nothing busy yet.
func scriptKill(t *testing.T, c *rawClient) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := c.do("SCRIPT", "KILL")
		if !strings.HasPrefix(got, "-NOTBUSY") || time.Now().After(deadline) {
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScriptStopsWhenClientKilled: a script that wrote and loops cannot be
// stopped by SCRIPT KILL (UNKILLABLE, as in Redis, where only SHUTDOWN
// NOSAVE is left), but CLIENT KILL of its client ends it and its keys are
// served again; what it wrote stays, as a failed script's writes do.
func TestScriptStopsWhenClientKilled(t *testing.T) {
	ts := startServer(t, Config{})
	ts.setBusyThreshold(50 * time.Millisecond)
	looping, other := dial(t, ts.addr), dial(t, ts.addr)
	id := strings.TrimSpace(strings.TrimPrefix(looping.do("CLIENT", "ID"), ":"))
	if _, err := looping.nc.Write([]byte("EVAL \"redis.call('set', KEYS[1], 'x'); while true do end\" 1 stuck\r\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.HasPrefix(other.do("SCRIPT", "KILL"), "-UNKILLABLE") {
		if time.Now().After(deadline) {
			t.Fatal("the looping script never became busy and unkillable")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := other.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID %s = %q", id, got)
	}
	for {
		got := other.do("GET", "stuck")
		if !strings.HasPrefix(got, "-BUSY") {
			if got != "$1\r\nx\r\n" {
				t.Fatalf("GET after the script's client was killed = %q, want its write", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script kept running after its client was killed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
