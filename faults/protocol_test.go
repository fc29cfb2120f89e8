package faults

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// A malformed RESP corpus modelled on Redis's own protocol tests
// (tests/unit/protocol.tcl), sent to a whole pgcache and to a real Redis
// side by side on fresh connections. Each case wants Redis's bytes back and
// Redis's close (or the documented difference), and after each one pgcache
// still serves a fresh client. proxy's own tests hold more cases against
// the RESP front alone (TestCompareProtocolWithRedis); these are the ones
// protocol.tcl has, the streaming desync cases, a request cut short, and
// what is left of the list.

// sentinel ends the input of a case whose connection stays open: its
// reply marks the end of the answers.
const (
	sentinel      = "ECHO sentinel\r\n"
	sentinelReply = "$8\r\nsentinel\r\n"
)

func TestMalformedRESP(t *testing.T) {
	leakCheck(t)
	p := startPgcache(t, memoryConfig(""))
	redisSrv := testenv.RedisFor(t)
	const protocolError = "-ERR Protocol error: "
	for _, tc := range []struct {
		name   string
		in     string
		closes bool   // the server closes the connection
		want   string // what pgcache's answer must start with
		// differs, when not "", is why pgcache's answer is not Redis 7's.
		differs string
	}{
		// protocol.tcl, in its order.
		{name: "empty query", in: "\r\nPING\r\n", want: "+PONG\r\n"},
		{name: "negative multibulk length", in: "*-10\r\nPING\r\n", want: "+PONG\r\n"},
		{name: "out of range multibulk length", in: "*3000000000\r\n", closes: true, want: protocolError + "invalid multibulk length"},
		{name: "multibulk length over max_multibulk_len", in: "*20000000\r\n", closes: true, want: protocolError + "invalid multibulk length",
			differs: "Redis 7 takes up to 2^31-1 arguments and waits for them; pgcache keeps the 1048576 limit Redis had until 6.2 (resp.max_multibulk_len)"},
		{name: "wrong multibulk payload header", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", closes: true, want: protocolError + "expected '$', got 'f'"},
		{name: "negative multibulk payload length", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", closes: true, want: protocolError + "invalid bulk length"},
		{name: "out of range multibulk payload length", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", closes: true, want: protocolError + "invalid bulk length"},
		{name: "non-number multibulk payload length", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", closes: true, want: protocolError + "invalid bulk length"},
		{name: "multibulk request not followed by bulk arguments", in: "*1\r\nfoo\r\n", closes: true, want: protocolError + "expected '$', got 'f'"},
		{name: "generic wrong number of args", in: "PING x y z\r\n", want: "-ERR wrong number of arguments for 'ping' command"},
		{name: "unbalanced number of quotes", in: "set \"\"\"test-key\"\"\" test-value\r\nping\r\n", closes: true, want: protocolError + "unbalanced quotes in request"},
		{name: "large number of args", in: "MSET" + strings.Repeat(" k v", 10000) + " {k}2 v2\r\nGET {k}2\r\n", want: "+OK\r\n$2\r\nv2\r\n"},
		// The rest of the list.
		{name: "bulk length past int64", in: "*1\r\n$99999999999999999999\r\n", closes: true, want: protocolError + "invalid bulk length"},
		{name: "multibulk length past int64", in: "*-99999999999999999999\r\n", closes: true, want: protocolError + "invalid multibulk length"},
		{name: "garbage inline", in: "\x01\x02\xff\xfe garbage\r\n", want: "-ERR unknown command '"},
		// strchr stops at a NUL: Redis never sees the newline after one, and
		// waits for the line to end until it is too big.
		{name: "NUL in an inline request", in: "\x00 garbage\r\nSET nul 1\r\n" + strings.Repeat("x", 70000), closes: true, want: protocolError + "NUL byte in inline request",
			differs: nulDiffers},
		{name: "NUL inside an inline argument", in: "SET nul a\x00b\r\n" + strings.Repeat("x", 70000), closes: true, want: protocolError + "NUL byte in inline request",
			differs: nulDiffers},
		{name: "NUL inside a bulk", in: "*3\r\n$3\r\nSET\r\n$3\r\nn\x00l\r\n$3\r\na\x00b\r\n*2\r\n$3\r\nGET\r\n$3\r\nn\x00l\r\n", want: "+OK\r\n$3\r\na\x00b\r\n"},
		{name: "unbalanced single quote", in: "GET 'k\r\n", closes: true, want: protocolError + "unbalanced quotes in request"},
		{name: "quote then no space", in: "GET \"k\"x\r\n", closes: true, want: protocolError + "unbalanced quotes in request"},
		{name: "empty lines", in: "\r\n\r\n\n\n  \r\nPING\r\n", want: "+PONG\r\n"},
		{name: "long inline under the limit", in: "ECHO " + strings.Repeat("i", 60000) + "\r\n", want: "$60000\r\n"},
		{name: "very long inline", in: "SET k " + strings.Repeat("i", 70000), closes: true, want: protocolError + "too big inline request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if !tc.closes {
				in += sentinel
			}
			got := exchange(t, p.resp, in, tc.closes)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("pgcache answered %.200q, want it to start with %q", got, tc.want)
			}
			if tc.differs != "" {
				t.Logf("unlike Redis: %s", tc.differs)
			} else if redis := exchange(t, redisSrv.Addr(), in, tc.closes); got != redis {
				t.Errorf("pgcache and Redis differ:\npgcache %.300q\nRedis   %.300q", got, redis)
			}
			stillServes(t, p.resp)
		})
	}

	// protocol.tcl's desync regression tests: a bad first byte, then
	// "payload" forever. The server must answer a protocol error and close
	// rather than buffer without end.
	for _, first := range []string{"\x00", "*\x00", "$\x00"} {
		t.Run("desync "+strings.TrimSpace(string(first[0])), func(t *testing.T) {
			got := streamUntilClosed(t, p.resp, first)
			redis := streamUntilClosed(t, redisSrv.Addr(), first)
			if !strings.Contains(got, "Protocol error") {
				t.Errorf("pgcache answered %q, want a protocol error", got)
			}
			if first[0] != '*' { // an inline request with a NUL
				t.Logf("unlike Redis (%q): %s", redis, nulDiffers)
			} else if got != redis {
				t.Errorf("pgcache %q, Redis %q", got, redis)
			}
			stillServes(t, p.resp)
		})
	}

	// A request cut short, then the client half-closes: no reply, nothing
	// runs, the connection is closed.
	t.Run("truncated request then EOF", func(t *testing.T) {
		for _, addr := range []string{p.resp, redisSrv.Addr()} {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(nc, "*3\r\n$3\r\nSET\r\n$1\r\nx")
			nc.(*net.TCPConn).CloseWrite()
			rest, err := io.ReadAll(nc)
			nc.Close()
			if err != nil || len(rest) > 0 {
				t.Errorf("%s: after a truncated request and EOF: %q, %v; want a close and nothing", addr, rest, err)
			}
			if v := mustDo(t, addr, "EXISTS", "x"); v != "0" {
				t.Errorf("%s: EXISTS x = %s: the truncated SET ran", addr, v)
			}
		}
	})
	stillServes(t, p.resp)
}

// exchange sends in on a fresh connection and reads until the server
// closes it (untilEOF, marked "<closed>") or answers the sentinel.
func exchange(t *testing.T, addr, in string, untilEOF bool) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(nc, in) // the server may close before taking it all
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if !untilEOF && bytes.HasSuffix(got, []byte(sentinelReply)) {
			return string(got[:len(got)-len(sentinelReply)])
		}
		if err != nil {
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				t.Fatalf("%s: no end after %.200q", addr, got)
			}
			return string(got) + "<closed>"
		}
	}
}

// nulDiffers is why pgcache answers an inline NUL unlike Redis.
const nulDiffers = "Redis's strchr stops at the NUL, so it waits for 64KiB and then answers too big inline request; pgcache answers at once"

// streamUntilClosed sends first and then the word "payload" over and over
// (as protocol.tcl does), up to 64MiB, until the server closes, and returns
// what the server answered.
func streamUntilClosed(t *testing.T, addr, first string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	replies := make(chan string, 1)
	go func() {
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, _ := io.ReadAll(nc)
		replies <- string(b)
	}()
	chunk := bytes.Repeat([]byte("payload"), 1024)
	nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	n, err := io.WriteString(nc, first)
	for sent := n; err == nil && sent < 64<<20; sent += n {
		n, err = nc.Write(chunk)
	}
	if err == nil {
		t.Fatalf("%s took 64MiB of a desynchronised stream without closing", addr)
	}
	return <-replies
}

// stillServes checks that a fresh client is served.
func stillServes(t testing.TB, addr string) {
	t.Helper()
	c := dialRESP(t, addr)
	defer c.Close()
	if v, err := c.Do("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING from a fresh client = %q, %v", v, err)
	}
}
