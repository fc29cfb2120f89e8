package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/pgcachetest"
)

// startPgcache runs pgcache in-process on free loopback ports with the
// given YAML (the embedded default when empty) and stops it at the end.
func startPgcache(t testing.TB, yaml string) *Server {
	t.Helper()
	return pgcachetest.Start(t, New, pgcachetest.Config{YAML: yaml}).Server
}

func redisClient(t testing.TB, s *Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr("resp"), DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func httpDo(t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// The README's promise: set over RESP, read over HTTP, and back.
func TestRESPAndHTTPShareRoutes(t *testing.T) {
	s := startPgcache(t, "")
	ctx := context.Background()
	rc := redisClient(t, s)
	if err := rc.Set(ctx, "a", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	status, body := httpDo(t, "GET", "http://"+s.Addr("http")+"/memory/get?id=a", nil)
	if status != 200 || string(body) != "b" {
		t.Fatalf("HTTP get = %d %q, want 200 \"b\"", status, body)
	}
	value := []byte{0, 1, 2, 0xff, '\r', '\n'}
	if status, _ := httpDo(t, "POST", "http://"+s.Addr("http")+"/memory/set?id=from-http", value); status/100 != 2 {
		t.Fatalf("HTTP set = %d", status)
	}
	got, err := rc.Get(ctx, "from-http").Bytes()
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("RESP get of an HTTP write = %q, %v", got, err)
	}
}

// A prefixed route stores keys without its prefix: RESP pg:42 is HTTP id=42.
func TestPrefixRouting(t *testing.T) {
	s := startPgcache(t, `
backends:
  mem: {type: memory, max_bytes: 16MiB}
  other: {type: memory, max_bytes: 16MiB}
routes:
  - {name: postgres, prefix: "pg:", backend: other}
  - {name: memory, prefix: "", backend: mem}
`)
	ctx := context.Background()
	rc := redisClient(t, s)
	if err := rc.Set(ctx, "pg:42", "answer", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if status, body := httpDo(t, "GET", "http://"+s.Addr("http")+"/postgres/get?id=42", nil); status != 200 || string(body) != "answer" {
		t.Fatalf("postgres/get?id=42 = %d %q", status, body)
	}
	if status, _ := httpDo(t, "GET", "http://"+s.Addr("http")+"/memory/get?id=pg:42", nil); status != 404 {
		t.Fatalf("memory route sees the prefixed key: %d", status)
	}
}

func TestAdmin(t *testing.T) {
	s := startPgcache(t, "")
	rc := redisClient(t, s)
	rc.Set(context.Background(), "secret-key-name", "v", 0)
	admin := "http://" + s.Addr("admin")
	for _, tc := range []struct {
		path       string
		wantStatus int
		want       string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 200, ""},
		{"/metrics", 200, "pgcache_route_requests_total"},
		{"/config", 200, `"routes"`},
		{"/debug/pprof/", 200, "goroutine"},
	} {
		status, body := httpDo(t, "GET", admin+tc.path, nil)
		if status != tc.wantStatus || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s = %d %.200q; want %d containing %q", tc.path, status, body, tc.wantStatus, tc.want)
		}
		if tc.path == "/metrics" && strings.Contains(string(body), "secret-key-name") {
			t.Errorf("a key appears in /metrics")
		}
	}
}

func TestInfoHasBackendSection(t *testing.T) {
	s := startPgcache(t, "")
	info, err := redisClient(t, s).Info(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"keyspace_hits:", "connected_clients:", "backend_mem_used_bytes:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
}

// Shutdown lets a pipeline that is in flight finish and flush every reply.
func TestShutdownDrains(t *testing.T) {
	s := startPgcache(t, "")
	ctx := context.Background()
	value := strings.Repeat("v", 256<<10)
	if err := redisClient(t, s).Set(ctx, "k", value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", s.Addr("resp"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 50
	if _, err := conn.Write(bytes.Repeat([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), n)); err != nil {
		t.Fatal(err)
	}
	// The first reply byte proves the server is executing the batch.
	rd := bufio.NewReaderSize(conn, 64<<10)
	if _, err := rd.Peek(1); err != nil {
		t.Fatal(err)
	}
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		shut <- s.Shutdown(sctx)
	}()
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(value), value)
	for i := range n {
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(rd, buf); err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n, err)
		}
		if string(buf) != want {
			t.Fatalf("reply %d is not the value", i+1)
		}
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	// Then the connection is closed.
	if _, err := rd.ReadByte(); err == nil {
		t.Fatal("connection still open after Shutdown")
	}
}
