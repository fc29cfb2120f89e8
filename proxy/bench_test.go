package proxy

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The GET and SET paths, end to end over loopback (client included, which
// allocates nothing either), and in process through parser, dispatch,
// route, memory backend and reply writer.

func BenchmarkLoopback(b *testing.B) {
	ts := startServer(b, Config{})
	val := strings.Repeat("v", 64)
	for _, tc := range []struct {
		name  string
		req   string
		reply string
	}{
		{"GET", encode("GET", "bench:key"), "$64\r\n" + val + "\r\n"},
		{"SET", encode("SET", "bench:key", val), "+OK\r\n"},
	} {
		for _, pipeline := range []int{1, 16} {
			b.Run(tc.name+"/P"+strconv.Itoa(pipeline), func(b *testing.B) {
				c := dial(b, ts.addr)
				c.do("SET", "bench:key", val)
				pingPong(b, c, tc.req, tc.reply, pipeline)
			})
		}
	}
}

// pingPong sends req pipeline times in one write and reads the replies,
// b.N requests in all, as redis-benchmark -P does.
func pingPong(b *testing.B, c *rawClient, req, reply string, pipeline int) {
	batch := []byte(strings.Repeat(req, pipeline))
	got := make([]byte, len(reply)*pipeline)
	c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
	b.ReportAllocs()
	b.ResetTimer()
	stop := testenv.CPUPerOp(b)
	for i := 0; i < b.N; i += pipeline {
		if _, err := c.nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c.nc, got); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop()
	if string(got[:len(reply)]) != reply {
		b.Fatalf("reply %q, want %q", got[:len(reply)], reply)
	}
}

// BenchmarkDispatch runs batches straight out of the read buffer. cpu-ns/op
// counts the whole process's CPU time, the collector's included.
func BenchmarkDispatch(b *testing.B) {
	ts := startServer(b, Config{})
	val := strings.Repeat("v", 64)
	for _, tc := range []struct{ name, req, reply string }{
		{"GET", encode("GET", "bench:key"), "$64\r\n" + val + "\r\n"},
		{"SET", encode("SET", "bench:key", val), "+OK\r\n"},
		{"MGET", encode("MGET", "bench:key", "pg:bench:key"), "*2\r\n$64\r\n" + val + "\r\n$-1\r\n"},
		{"inline-GET", "GET bench:key\r\n", "$64\r\n" + val + "\r\n"},
		{"MULTI-10SET-EXEC", multiSets(10, val), "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 10) +
			"*10\r\n" + strings.Repeat("+OK\r\n", 10)},
		// redis-py's lock release: of a lock nobody holds (what
		// redis-benchmark's random keys give), and of one just taken.
		{"EVALSHA-release-free", encode("EVALSHA", lockReleaseSHA, "1", "bench:lock:free", "tok"), ":0\r\n"},
		{"EVALSHA-release-held", encode("SET", "bench:lock", "tok") + encode("EVALSHA", lockReleaseSHA, "1", "bench:lock", "tok"),
			"+OK\r\n:1\r\n"},
		// Collections, of a size that stays put: a member set again, a
		// push and its pop.
		{"HSET", encode("HSET", "bench:h", "f", val), ":0\r\n"},
		{"SADD", encode("SADD", "bench:s", "m"), ":0\r\n"},
		{"ZADD", encode("ZADD", "bench:z", "1", "m"), ":0\r\n"},
		{"LPUSH-RPOP", encode("LPUSH", "bench:l", val) + encode("RPOP", "bench:l"), ":101\r\n$64\r\n" + val + "\r\n"},
		{"RPOP-missing", encode("RPOP", "bench:none"), "$-1\r\n"},
		// Sixteen pushes pipelined, then sixteen pops: two runs on one key.
		{"LPUSH-RPOP-P16", strings.Repeat(encode("LPUSH", "bench:l", val), 16) + strings.Repeat(encode("RPOP", "bench:l"), 16),
			pushReplies(101, 16) + strings.Repeat("$64\r\n"+val+"\r\n", 16)},
		{"LRANGE_100", encode("LRANGE", "bench:l", "0", "99"), "*100\r\n" + strings.Repeat("$64\r\n"+val+"\r\n", 100)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			nc, peer := net.Pipe()
			defer nc.Close()
			defer peer.Close()
			c := newConn(ts.Server, nc, 1)
			c.init()
			ts.scripts.Script([][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(lockRelease)})
			req := []byte(tc.req)
			run := func() {
				c.rd.r, c.rd.w = 0, copy(c.rd.buf, req)
				c.batch()
			}
			ts.backend("memory").Set(b.Context(), "bench:key", []byte(val), backends.SetOptions{})
			c.rd.r, c.rd.w = 0, copy(c.rd.buf, benchColls(val))
			c.batch()
			c.out = c.out[:0]
			run()
			if got := string(c.out); got != tc.reply {
				b.Fatalf("reply %q, want %q", got, tc.reply)
			}
			b.ReportAllocs()
			b.ResetTimer()
			stop := testenv.CPUPerOp(b) // steadier than ns/op on a shared machine
			for range b.N {
				c.out = c.out[:0]
				run()
			}
			b.StopTimer()
			stop()
			if !bytes.Equal(c.out, []byte(tc.reply)) {
				b.Fatalf("reply %q", c.out)
			}
		})
	}
}

// pushReplies are the replies of n pushes onto a list of from-1 elements.
func pushReplies(from, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ":%d\r\n", from+i)
	}
	return b.String()
}

// benchColls makes BenchmarkDispatch's collections: a hash, a set and a
// sorted set of one member, and a list of 100 elements.
func benchColls(val string) string {
	req := encode("DEL", "bench:h", "bench:s", "bench:z", "bench:l") + encode("HSET", "bench:h", "f", val) +
		encode("SADD", "bench:s", "m") + encode("ZADD", "bench:z", "1", "m")
	push := []string{"RPUSH", "bench:l"}
	for range 100 {
		push = append(push, val)
	}
	return req + encode(push...)
}

// BenchmarkDispatchSpread runs batches of 16 pipelined GETs or SETs of
// random keys out of 100,000 with 100-byte values, as redis-benchmark -r
// 100000 -P 16 -d 100 sends them. Unlike BenchmarkDispatch's one key, the
// keyspace does not fit the CPU's caches: this is the plain path as a
// server under that load runs it, without the sockets.
func BenchmarkDispatchSpread(b *testing.B) {
	ts := startServer(b, Config{})
	val := strings.Repeat("v", 100)
	const keys, pipeline = 100_000, 16
	for i := range keys {
		ts.backend("memory").Set(b.Context(), "key:"+strconv.Itoa(i), []byte(val), backends.SetOptions{})
	}
	for _, verb := range []string{"GET", "SET"} {
		b.Run(verb, func(b *testing.B) {
			nc, peer := net.Pipe()
			defer nc.Close()
			defer peer.Close()
			c := newConn(ts.Server, nc, 1)
			c.init()
			rng := rand.New(rand.NewPCG(1, 2))
			batches := make([][]byte, 1024)
			for i := range batches {
				var req strings.Builder
				for range pipeline {
					args := []string{verb, "key:" + strconv.Itoa(rng.IntN(keys))}
					if verb == "SET" {
						args = append(args, val)
					}
					req.WriteString(encode(args...))
				}
				batches[i] = []byte(req.String())
			}
			b.ReportAllocs()
			b.ResetTimer()
			stop := testenv.CPUPerOp(b)
			for i := 0; i < b.N; i += pipeline {
				c.out = c.out[:0]
				c.rd.r, c.rd.w = 0, copy(c.rd.buf, batches[(i/pipeline)%len(batches)])
				c.batch()
			}
			b.StopTimer()
			stop()
			want := "+OK\r\n"
			if verb == "GET" {
				want = "$100\r\n" + val + "\r\n"
			}
			if string(c.out) != strings.Repeat(want, pipeline) {
				b.Fatalf("replies %q, want %d of %q", c.out, pipeline, want)
			}
		})
	}
}

// lockRelease is redis-py's Lock release script; lockReleaseSHA its SHA1.
const (
	lockRelease    = `local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1`
	lockReleaseSHA = "2aef8d7ce63503709a01cbf6ad6bb4b93d5c3909"
)

// multiSets is a transaction of n SETs of distinct keys to val.
func multiSets(n int, val string) string {
	req := encode("MULTI")
	for i := range n {
		req += encode("SET", "bench:tx:"+strconv.Itoa(i), val)
	}
	return req + encode("EXEC")
}
