package proxy

import (
	"context"
	"strconv"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/route"
)

// Tests of CLIENT TRACKING's read hook (tracking.go) as the dispatcher runs
// it: registered before the read, bounced after the reply. The tracker's
// own logic is tested in package tracking.

// startNotifying starts a server whose "postgres" route (pg:) stores in a
// backendtest.Notifying.
func startNotifying(t *testing.T) (*testServer, *backendtest.Notifying) {
	t.Helper()
	var nb *backendtest.Notifying
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "postgres" {
			nb = backendtest.NewNotifying(r.Backend)
			r.Backend = nb
		}
	})
	return ts, nb
}

// tracker3 is a RESP3 connection with CLIENT TRACKING on with opts.
func tracker3(t *testing.T, addr string, opts ...string) *rawClient {
	t.Helper()
	c := dial(t, addr)
	c.do("HELLO", "3")
	if got := c.do(append([]string{"CLIENT", "TRACKING", "on"}, opts...)...); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING on %v: %q", opts, got)
	}
	return c
}

// pushOf is the RESP3 invalidation of keys (none: the null of "drop
// everything").
func pushOf(keys ...string) string {
	if len(keys) == 0 {
		return ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	}
	s := ">2\r\n$10\r\ninvalidate\r\n*" + strconv.Itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += "$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n"
	}
	return s
}

// quiet checks that c has nothing pending: a PING's reply comes first.
func quiet(t *testing.T, c *rawClient, when string) {
	t.Helper()
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("%s: got %q, want only PONG", when, got)
	}
}

// TestTrackingReadRacesReport: a read that registered its key and is
// held before it reads the backend, while the backend reports a change of
// the key (or loses its source), gets its reply and then the
// invalidation: the client drops what it just cached. The pause hook
// makes the interleaving certain. The same for a read-only EXEC (valkey-go's
// cached read), which reads its keys before its requests run.
func TestTrackingReadRacesReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report backends.Outside
		want   string
		exec   bool
	}{
		{"keys", backends.Outside{Keys: []string{"k"}, Source: "postgres"}, pushOf("pg:k"), false},
		{"all", backends.Outside{All: true, Source: "postgres"}, pushOf("pg:k"), false},
		{"lost", backends.Outside{Lost: true, All: true, Source: "postgres"}, pushOf(), false},
		{"exec-keys", backends.Outside{Keys: []string{"k"}, Source: "postgres"}, pushOf("pg:k"), true},
		{"exec-lost", backends.Outside{Lost: true, All: true, Source: "postgres"}, pushOf(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, nb := startNotifying(t)
			c := tracker3(t, ts.addr)
			writer := dial(t, ts.addr)
			writer.do("SET", "pg:k", "old")
			paused := make(chan chan struct{})
			nb.Pause(paused)
			if tc.exec {
				c.do("MULTI")
				c.do("PTTL", "pg:k")
				c.do("GET", "pg:k")
				c.send(encode("EXEC"))
			} else {
				c.send(encode("GET", "pg:k"))
			}
			release := <-paused // registered, not yet read
			nb.Pause(nil)
			if _, err := nb.Backend.Set(context.Background(), "k", []byte("new"), backends.SetOptions{}); err != nil {
				t.Fatal(err)
			}
			nb.Report(tc.report)
			close(release)
			want := "$3\r\nnew\r\n"
			if tc.exec {
				want = "*2\r\n:-1\r\n$3\r\nnew\r\n"
			}
			if got := c.reply(); got != want {
				t.Fatalf("the held read: got %q, want %q", got, want)
			}
			if got := readPush(t, c); got != tc.want {
				t.Fatalf("after the reply: got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTrackingUnwatchedReadBounces: a key a Notifier served but will not
// report the changes of is invalidated for its reader right after the
// reply, alone or read in a transaction (whose backend tells once the run
// is over); a key served watched is kept.
func TestTrackingUnwatchedReadBounces(t *testing.T) {
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "postgres" {
			u := backendtest.NewUnwatching(r.Backend)
			u.Unwatch("u")
			r.Backend = u
		}
	})
	c := tracker3(t, ts.addr)
	c.do("SET", "pg:w", "1")
	c.do("SET", "pg:u", "2")
	if got := c.do("GET", "pg:w"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET pg:w: %q", got)
	}
	quiet(t, c, "a watched read")
	if got := c.do("GET", "pg:u"); got != "$1\r\n2\r\n" {
		t.Fatalf("GET pg:u: %q", got)
	}
	if got, want := readPush(t, c), pushOf("pg:u"); got != want {
		t.Fatalf("after an unwatched read: got %q, want %q", got, want)
	}
	if keys, _, _ := ts.tracking.Counts(); keys != 1 {
		t.Errorf("tracked keys: %d, want 1 (pg:w)", keys)
	}
	c.do("MULTI")
	c.do("GET", "pg:u")
	c.do("SET", "pg:x", "3")
	if got, want := c.do("EXEC"), "*2\r\n$1\r\n2\r\n+OK\r\n"; got != want {
		t.Fatalf("EXEC: got %q, want %q", got, want)
	}
	if got, want := readPush(t, c), pushOf("pg:u"); got != want {
		t.Fatalf("after a transaction's unwatched read: got %q, want %q", got, want)
	}
	quiet(t, c, "after the transaction")
}

// TestTrackingTableMaxKeysConfig: CONFIG SET tracking-table-max-keys
// reaches the tracker, and CONFIG GET reads it back.
func TestTrackingTableMaxKeysConfig(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	if got := c.do("CONFIG", "SET", "tracking-table-max-keys", "5000"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	if got := ts.tracking.MaxKeys(); got != 5000 {
		t.Errorf("the tracker's bound: %d, want 5000", got)
	}
	if got, want := c.do("CONFIG", "GET", "tracking-table-max-keys"), "*2\r\n$23\r\ntracking-table-max-keys\r\n$4\r\n5000\r\n"; got != want {
		t.Errorf("CONFIG GET: got %q, want %q", got, want)
	}
}
