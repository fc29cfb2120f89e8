package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// Hostile HTTP against a whole pgcache whose route writes a standard
// PostgreSQL table: each request gets its status and a closed connection,
// nothing it carries reaches PostgreSQL, and the server goes on serving.
// httpapi's own tests (hostile_test.go) hold the framing cases against the
// data API alone; these add bodies over the limit, chunked and announced,
// and check the table rather than a memory backend.
func TestHostileHTTP(t *testing.T) {
	leakCheck(t)
	pool := pg.Pool(t)
	testenv.Exec(t, pool, "DROP TABLE IF EXISTS faults_http")
	p := startPgcache(t, fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q}
routes:
  - {name: kv, prefix: "", backend: pg, table: faults_http, durability: standard}
http: {max_body_bytes: 1MiB, max_header_bytes: 8KiB, read_timeout: 2s}
`, pg.DSN()))
	mustDo(t, p.resp, "SET", "a", "1")
	const inner = "POST /kv/set?id=inner HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv"
	chunk := func(n int) string { return fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat("c", n)) }
	for _, tc := range []struct {
		name   string
		req    string
		status int
	}{
		{"Content-Length and chunked", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + inner, 400},
		{"chunked and Content-Length", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 80\r\n\r\n0\r\n\r\n" + inner, 400},
		{"two Content-Lengths", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 75\r\n\r\nv" + inner, 400},
		{"Content-Length not a number", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\nv", 400},
		{"negative Content-Length", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nv", 400},
		{"bad chunk size", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nv\r\n0\r\n\r\n", 400},
		{"huge header", "GET /kv/get?id=a HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n", 431},
		{"many headers", "GET /kv/get?id=a HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-H: v\r\n", 2000) + "\r\n", 431},
		{"huge request line", "GET /kv/get?id=" + strings.Repeat("k", 16<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431},
		{"body over the limit, announced", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n" + strings.Repeat("b", 2<<20), 413},
		{"body over the limit, chunked", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat(chunk(64<<10), 20) + "0\r\n\r\n", 413},
		{"body over the limit, 100-continue", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1073741824\r\n\r\n", 413},
		{"body cut short", "POST /kv/set?id=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", 408},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, closed := rawHTTP(t, p.http, tc.req)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if !resp.Close || !closed {
				t.Errorf("Connection: close %v, closed %v; want both", resp.Close, closed)
			}
			for _, k := range []string{"smuggled", "inner"} {
				var n int
				if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM faults_http WHERE key = $1", k).Scan(&n); err != nil || n != 0 {
					t.Errorf("key %q reached PostgreSQL (%d rows, %v)", k, n, err)
				}
			}
			resp, err := httpClient(t).Get("http://" + p.http + "/kv/get?id=a")
			if err != nil {
				t.Fatalf("a well-behaved client after it: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "1" {
				t.Errorf("a well-behaved client after it: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// rawHTTP writes req on a fresh connection (in the background: the server
// may answer and close before taking it all), reads one response, and
// reports whether the server then closed the connection.
func rawHTTP(t *testing.T, addr, req string) (*http.Response, bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(nc, req)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	ne, timeout := errors.AsType[net.Error](err)
	return resp, err != nil && !(timeout && ne.Timeout())
}
