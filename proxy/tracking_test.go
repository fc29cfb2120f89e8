package proxy

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// stepper sends one command at a time and returns every byte the server
// sent until it answers an ECHO sentinel sent after the command's reply:
// a push queued by the command comes between the two.
type stepper struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
	id string
}

func newStepper(t *testing.T, addr string) *stepper {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	s := &stepper{t: t, nc: nc, br: bufio.NewReader(nc)}
	s.id = strings.TrimSuffix(strings.TrimPrefix(s.one("CLIENT", "ID"), ":"), "\r\n")
	return s
}

func (s *stepper) one(args ...string) string {
	s.t.Helper()
	s.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.nc.Write([]byte(encode(args...))); err != nil {
		s.t.Fatalf("write: %v", err)
	}
	var b strings.Builder
	if err := readReply(s.br, &b); err != nil {
		s.t.Fatalf("read %q: %v", b.String(), err)
	}
	return b.String()
}

func (s *stepper) step(args ...string) string {
	s.t.Helper()
	got := s.one(args...)
	s.nc.Write([]byte(encode("ECHO", "sentinel")))
	for {
		var b strings.Builder
		if err := readReply(s.br, &b); err != nil {
			s.t.Fatalf("read after %q: %v", got, err)
		}
		if b.String() == "$8\r\nsentinel\r\n" {
			return got
		}
		got += b.String()
	}
}

// TestTrackingCompareWithRedis runs CLIENT TRACKING's option
// combinations, CLIENT CACHING, GETREDIR and TRACKINGINFO, and the pushes
// a RESP3 client gets for its own writes and a flush, on pgcache and on
// redis-server, and wants the same bytes. {other} is the id of a second
// connection of the same server; ids in replies are written ID.
func TestTrackingCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	ids := regexp.MustCompile(`:[0-9]+\r\n`)
	for _, sc := range []struct {
		name string
		cmds [][]string
	}{
		{"options", [][]string{
			{"CLIENT", "TRACKING", "foo"},
			{"CLIENT", "TRACKING", "on", "foo"},
			{"CLIENT", "TRACKING", "on", "redirect"},
			{"CLIENT", "TRACKING", "on", "redirect", "abc"},
			{"CLIENT", "TRACKING", "on", "redirect", "999999"},
			{"CLIENT", "TRACKING", "on", "redirect", "0"},
			{"CLIENT", "TRACKING", "on", "redirect", "{other}", "redirect", "{other}"},
			{"CLIENT", "TRACKING", "on", "prefix", "a"},
			{"CLIENT", "TRACKING", "on", "bcast", "optin"},
			{"CLIENT", "TRACKING", "on", "optin", "optout"},
			{"CLIENT", "TRACKING", "on", "prefix"},
			{"CLIENT", "TRACKING", "off", "prefix", "a"},
			{"CLIENT", "TRACKING", "off", "bcast", "optin"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "ab"},
			{"CLIENT", "TRACKING"},
			{"CLIENT", "CACHING", "yes"},
			{"CLIENT", "CACHING", "foo"},
			{"CLIENT", "CACHING"},
			{"CLIENT", "TRACKINGINFO"},
			{"CLIENT", "TRACKINGINFO", "x"},
			{"CLIENT", "GETREDIR"},
		}},
		{"modes", [][]string{
			{"CLIENT", "TRACKING", "on", "optin"},
			{"CLIENT", "CACHING", "foo"},
			{"CLIENT", "CACHING", "no"},
			{"CLIENT", "CACHING", "yes"},
			{"CLIENT", "TRACKINGINFO"},
			{"GET", "k"},
			{"CLIENT", "TRACKINGINFO"},
			{"CLIENT", "TRACKING", "on", "optout"},
			{"CLIENT", "TRACKING", "on", "bcast"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "a"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "ab"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "b", "noloop"},
			{"CLIENT", "TRACKINGINFO"},
			{"CLIENT", "TRACKING", "on"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "optout", "noloop"},
			{"CLIENT", "CACHING", "yes"},
			{"CLIENT", "CACHING", "no"},
			{"CLIENT", "TRACKINGINFO"},
			{"CLIENT", "GETREDIR"},
			{"CLIENT", "TRACKING", "on", "redirect", "{other}"},
			{"CLIENT", "GETREDIR"},
			{"CLIENT", "TRACKINGINFO"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "GETREDIR"},
			{"CLIENT", "TRACKING", "on", "bcast"},
			{"CLIENT", "TRACKINGINFO"},
		}},
		{"resp3 pushes", [][]string{
			{"HELLO", "3"},
			{"CLIENT", "TRACKING", "on"},
			{"CLIENT", "TRACKINGINFO"},
			{"SET", "a", "0"},
			{"GET", "a"},
			{"SET", "a", "1"},
			{"SET", "a", "2"},
			{"MGET", "a", "b"},
			{"DEL", "a"},
			{"GET", "c"},
			{"FLUSHALL"},
			{"SET", "c", "1"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "optin"},
			{"GET", "d"},
			{"SET", "d", "1"},
			{"CLIENT", "CACHING", "yes"},
			{"GET", "d"},
			{"SET", "d", "2"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "p:", "noloop"},
			{"SET", "p:1", "x"},
			{"FLUSHALL"},
		}},
		{"bcast batches", [][]string{
			{"HELLO", "3"},
			{"CLIENT", "TRACKING", "on", "bcast", "prefix", "b:", "prefix", "a:"},
			{"MSET", "b:1", "x", "a:2", "y", "a:1", "z", "c:1", "w"},
			{"MSET", "c:9", "1", "a:9", "1", "b:9", "2", "b:9", "3"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "bcast", "noloop"},
			{"MSET", "k1", "1", "k2", "2"},
			{"CLIENT", "TRACKING", "off"},
			{"CLIENT", "TRACKING", "on", "bcast"},
			{"MSET", "k2", "1", "k1", "2"},
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			for _, addr := range []string{ts.addr, redisAddr} {
				newStepper(t, addr).one("FLUSHALL")
			}
			ours, theirs := newStepper(t, ts.addr), newStepper(t, redisAddr)
			oursOther, theirsOther := newStepper(t, ts.addr), newStepper(t, redisAddr)
			for _, cmd := range sc.cmds {
				a, b := make([]string, len(cmd)), make([]string, len(cmd))
				for i, arg := range cmd {
					a[i] = strings.ReplaceAll(arg, "{other}", oursOther.id)
					b[i] = strings.ReplaceAll(arg, "{other}", theirsOther.id)
				}
				if cmd[0] == "HELLO" { // the servers' names and versions differ
					ours.one(a...)
					theirs.one(b...)
					continue
				}
				got, want := ours.step(a...), theirs.step(b...)
				got, want = ids.ReplaceAllString(got, ":ID\r\n"), ids.ReplaceAllString(want, ":ID\r\n")
				if got != want {
					t.Errorf("%v:\n got %q\nwant %q", cmd, got, want)
				}
			}
		})
	}
}

// TestSubscribeCompareWithRedis: RESP2's Pub/Sub mode, as far as pgcache
// has it (the invalidation channel), byte for byte with Redis.
func TestSubscribeCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	in := encode("SUBSCRIBE", "__redis__:invalidate", "other") + encode("PING") + encode("PING", "x") +
		encode("GET", "a") + encode("UNSUBSCRIBE", "other") + encode("UNSUBSCRIBE") + encode("UNSUBSCRIBE") +
		encode("GET", "a") + encode("ECHO", "sentinel")
	if got, want := exchange(t, ts.addr, in, false), exchange(t, redisAddr, in, false); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// readPush reads one reply within a few seconds, or fails.
func readPush(t *testing.T, c *rawClient) string {
	t.Helper()
	return c.reply()
}

// TestTrackingPushReachesIdleClient: a RESP3 client that read a key and
// then only waits gets the invalidation of another client's write, and a
// RESP2 client redirecting to a subscribed connection gets it there.
func TestTrackingPushReachesIdleClient(t *testing.T) {
	for _, cfg := range []Config{{}, {IdleTimeout: time.Hour}} {
		ts := startServer(t, cfg)
		reader, writer := dial(t, ts.addr), dial(t, ts.addr)
		reader.do("HELLO", "3")
		if got := reader.do("CLIENT", "TRACKING", "on"); got != "+OK\r\n" {
			t.Fatalf("tracking on: %q", got)
		}
		reader.do("GET", "pg:k") // a prefixed route: the client's spelling comes back
		writer.do("SET", "pg:k", "v")
		if got, want := readPush(t, reader), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\npg:k\r\n"; got != want {
			t.Fatalf("push: got %q, want %q", got, want)
		}
		// A second write has nothing to invalidate: the key was dropped.
		writer.do("SET", "pg:k", "w")
		if got := reader.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("after a second write: %q, want only PONG", got)
		}

		// RESP2, REDIRECT to a subscribed connection.
		sub, r2 := dial(t, ts.addr), dial(t, ts.addr)
		subID := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"), "\r\n")
		if got, want := sub.do("SUBSCRIBE", invalidateChannel), "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n"; got != want {
			t.Fatalf("subscribe: got %q, want %q", got, want)
		}
		r2.do("CLIENT", "TRACKING", "on", "REDIRECT", subID)
		r2.do("MGET", "a", "b")
		writer.do("MSET", "b", "1", "x", "2")
		if got, want := readPush(t, sub), "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nb\r\n"; got != want {
			t.Fatalf("message: got %q, want %q", got, want)
		}
		writer.do("FLUSHDB")
		if got, want := readPush(t, sub), "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"; got != want {
			t.Fatalf("flush message: got %q, want %q", got, want)
		}
		if got, want := readPush(t, reader), ">2\r\n$10\r\ninvalidate\r\n_\r\n"; got != want {
			t.Fatalf("flush push: got %q, want %q", got, want)
		}
		// The redirect target gone: a RESP3 tracker is told.
		r3 := dial(t, ts.addr)
		r3.do("HELLO", "3")
		gone := dial(t, ts.addr)
		goneID := strings.TrimSuffix(strings.TrimPrefix(gone.do("CLIENT", "ID"), ":"), "\r\n")
		r3.do("CLIENT", "TRACKING", "on", "REDIRECT", goneID)
		r3.do("GET", "z")
		gone.nc.Close()
		eventually(t, "the redirect target leaves", func() bool { return ts.connByID(mustInt(goneID)) == nil })
		writer.do("SET", "z", "1")
		if got, want := readPush(t, r3), ">2\r\n$21\r\ntracking-redir-broken\r\n:"+goneID+"\r\n"; got != want {
			t.Fatalf("broken redirect: got %q, want %q", got, want)
		}
	}
}

func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// TestTrackingTransactionAndNoLoop: a write inside MULTI/EXEC is announced
// once the run is over; NOLOOP spares the writer its own writes; BCAST
// announces every write under a prefix.
func TestTrackingTransactionAndNoLoop(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	a.do("HELLO", "3")
	a.do("CLIENT", "TRACKING", "on", "NOLOOP")
	a.do("GET", "k")
	a.do("SET", "k", "mine") // NOLOOP: no push for it
	if got := a.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("NOLOOP: got %q, want only PONG", got)
	}
	a.do("GET", "k")
	b.do("MULTI")
	b.do("SET", "k", "1")
	b.do("INCR", "n")
	if got := b.do("EXEC"); got != "*2\r\n+OK\r\n:1\r\n" {
		t.Fatalf("EXEC: %q", got)
	}
	if got, want := readPush(t, a), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"; got != want {
		t.Fatalf("after EXEC: got %q, want %q", got, want)
	}

	c := dial(t, ts.addr)
	c.do("HELLO", "3")
	c.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "pg:", "PREFIX", "u:")
	b.do("SET", "pg:x:1", "v") // the pgx route, under the pg: prefix
	if got, want := readPush(t, c), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\npg:x:1\r\n"; got != want {
		t.Fatalf("BCAST: got %q, want %q", got, want)
	}
	b.do("SET", "other", "v")
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("BCAST outside the prefixes: %q", got)
	}
}

// TestValkeyGoClientSideCache: valkey-go with its default options (client-
// side caching on) reads a key twice, the second from its own memory; a
// write by another client reaches its cache, and the next read returns
// the new value. On the catch-all route and a prefixed one.
func TestValkeyGoClientSideCache(t *testing.T) {
	ts := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{ts.addr}})
	if err != nil {
		t.Fatalf("valkey.NewClient with its default options: %v", err)
	}
	defer client.Close()
	other := dial(t, ts.addr)
	for _, key := range []string{"csc:a", "pg:csc:b"} {
		other.do("SET", key, "old")
		read := func() (string, bool) {
			t.Helper()
			res := client.DoCache(ctx, client.B().Get().Key(key).Cache(), time.Minute)
			v, err := res.ToString()
			if err != nil {
				t.Fatalf("DoCache GET %s: %v", key, err)
			}
			return v, res.IsCacheHit()
		}
		if v, hit := read(); v != "old" || hit {
			t.Fatalf("first read of %s: %q, hit %v; want old from the server", key, v, hit)
		}
		if v, hit := read(); v != "old" || !hit {
			t.Fatalf("second read of %s: %q, hit %v; want old from the app's memory", key, v, hit)
		}
		other.do("SET", key, "new")
		eventually(t, "the write reaches valkey-go's cache", func() bool {
			v, _ := read()
			return v == "new"
		})
		if v, hit := read(); v != "new" || !hit {
			t.Fatalf("read after the refill of %s: %q, hit %v; want new from memory", key, v, hit)
		}
	}
}

// unseenBackend hides a memory store's Notifier, as a backend others
// may write (PostgreSQL, Valkey) has none.
type unseenBackend struct{ backends.Backend }

func (u unseenBackend) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	return u.Backend.(backends.Atomic).Atomically(ctx, keys, fn)
}

// TestTrackingUnseenRouteBounces: a key of a route whose writes pgcache
// may not see is invalidated right after the read that served it, so no
// client keeps it; valkey-go then never serves it from memory.
func TestTrackingUnseenRouteBounces(t *testing.T) {
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "postgres" {
			r.Backend = unseenBackend{r.Backend}
		}
	})
	c := dial(t, ts.addr)
	c.do("HELLO", "3")
	c.do("CLIENT", "TRACKING", "on")
	c.do("SET", "pg:k", "v")
	if got := c.do("GET", "pg:k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET: %q", got)
	}
	if got, want := readPush(t, c), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\npg:k\r\n"; got != want {
		t.Fatalf("after the read: got %q, want %q", got, want)
	}
	if keys, _, _ := ts.tracking.Counts(); keys != 0 {
		t.Errorf("tracked keys: %d, want 0", keys)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{ts.addr}})
	if err != nil {
		t.Fatalf("valkey.NewClient: %v", err)
	}
	defer client.Close()
	for range 3 {
		res := client.DoCache(ctx, client.B().Get().Key("pg:k").Cache(), time.Minute)
		if v, err := res.ToString(); err != nil || v != "v" {
			t.Fatalf("DoCache: %q, %v", v, err)
		}
		if res.IsCacheHit() {
			// The push may trail the reply: valkey-go serves from memory
			// until it arrives, which is the reply's own moment.
			eventually(t, "the bounce reaches valkey-go", func() bool {
				return !client.DoCache(ctx, client.B().Get().Key("pg:k").Cache(), time.Minute).IsCacheHit()
			})
		}
	}
}
