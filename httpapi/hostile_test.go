package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// rawConn is a client that writes bytes as they are, for requests no HTTP
// client would send. Every read is bounded, so a server that never answers
// fails the test instead of hanging it.
type rawConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

const rawReadBound = 10 * time.Second

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) write(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// read reads one response and its body.
func (r *rawConn) read() (*http.Response, string) {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(rawReadBound))
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		r.t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the server closed the connection: the next read
// finds the end of the stream, with nothing before it.
func (r *rawConn) closed() bool {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(rawReadBound))
	n, err := r.br.Read(make([]byte, 1))
	if n > 0 {
		r.t.Errorf("unexpected bytes after the last response")
		return false
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return false
	}
	return err != nil // io.EOF, or a reset
}

// stillServes checks that a new connection gets a normal answer.
func stillServes(t *testing.T, s *dataServer) {
	t.Helper()
	rc := dialRaw(t, s.addr)
	rc.write("GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := rc.read(); resp.StatusCode != 200 || body != "1" {
		t.Errorf("next request: %d %q, want 200 \"1\"", resp.StatusCode, body)
	}
}

// TestHostile sends what a broken or malicious client would; after each, the
// connection is dealt with and the server still answers others.
func TestHostile(t *testing.T) {
	s := startData(t, Config{ReadBufferSize: 4096, ReadTimeout: 300 * time.Millisecond})
	if _, err := s.backend("mem").Set(context.Background(), "a", []byte("1"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	// inner is a request hidden in a body by the framing a proxy might trust.
	const inner = "POST /mem/set?id=inner HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv"

	for _, tc := range []struct {
		name   string
		req    string
		status int
		want   string // body prefix
	}{
		{
			name:   "Content-Length then Transfer-Encoding",
			req:    "POST /mem/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + inner,
			status: 400, want: "request has both Content-Length and Transfer-Encoding\n",
		},
		{
			name:   "Transfer-Encoding then Content-Length",
			req:    "POST /mem/set?id=smuggled HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-length: 200\r\n\r\n0\r\n\r\n" + inner,
			status: 400, want: "request has both Content-Length and Transfer-Encoding\n",
		},
		{
			name:   "Transfer-Encoding not chunked",
			req:    "POST /mem/set?id=smuggled HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + inner,
			status: 400, want: "bad request: ",
		},
		{
			name:   "two Content-Lengths",
			req:    "POST /mem/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 75\r\n\r\nv" + inner,
			status: 400, want: "bad request: ",
		},
		{
			name:   "huge header",
			req:    "GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 8000) + "\r\n\r\n",
			status: 431, want: "request header too large: limit 4096 bytes\n",
		},
		{
			name:   "huge request line",
			req:    "GET /mem/get?id=" + strings.Repeat("k", 8000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
			status: 431, want: "request header too large: limit 4096 bytes\n",
		},
		{
			name:   "slow headers",
			req:    "GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n", // and then nothing
			status: 408, want: "request timeout\n",
		},
		{
			name:   "slow body",
			req:    "POST /mem/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab",
			status: 408, want: "request timeout\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, s.addr)
			rc.write(tc.req)
			resp, body := rc.read()
			if resp.StatusCode != tc.status || !strings.HasPrefix(body, tc.want) {
				t.Errorf("got %d %q, want %d %q…", resp.StatusCode, body, tc.status, tc.want)
			}
			if !resp.Close {
				t.Errorf("response does not say Connection: close")
			}
			if !rc.closed() {
				t.Errorf("connection left open")
			}
			for _, k := range []string{"smuggled", "inner"} {
				if _, ok, _ := s.backend("mem").Get(context.Background(), k); ok {
					t.Errorf("key %q was written", k)
				}
			}
			stillServes(t, s)
		})
	}
}

// TestPipelining: requests written back to back are answered in order.
func TestPipelining(t *testing.T) {
	s := startData(t, Config{})
	rc := dialRaw(t, s.addr)
	rc.write("POST /mem/set?id=p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nv1" +
		"GET /mem/get?id=p HTTP/1.1\r\nHost: x\r\n\r\n" +
		"DELETE /mem/del?id=p HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /mem/get?id=p HTTP/1.1\r\nHost: x\r\n\r\n")
	for i, want := range []struct {
		status int
		body   string
	}{{204, ""}, {200, "v1"}, {200, "1"}, {404, "not found\n"}} {
		resp, body := rc.read()
		if resp.StatusCode != want.status || body != want.body {
			t.Errorf("response %d: %d %q, want %d %q", i, resp.StatusCode, body, want.status, want.body)
		}
	}
}

// TestMaxConns: a connection past MaxConns is answered 503 and closed; once
// one closes, a new one is served.
func TestMaxConns(t *testing.T) {
	s := startData(t, Config{MaxConns: 1})
	first := dialRaw(t, s.addr)
	first.write("GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := first.read(); resp.StatusCode != 404 {
		t.Fatalf("first connection: %d", resp.StatusCode)
	}
	// first stays open (keep-alive) and holds the one slot.
	second := dialRaw(t, s.addr)
	second.write("GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := second.read(); resp.StatusCode != 503 {
		t.Errorf("connection over the limit: %d, want 503", resp.StatusCode)
	}
	first.c.Close()
	for i := range 200 { // bounded: the slot frees once the server sees the close
		rc := dialRaw(t, s.addr)
		rc.write("GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, _ := rc.read()
		if resp.StatusCode == 404 {
			return
		}
		if i == 199 {
			t.Fatalf("never served after the first connection closed: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
