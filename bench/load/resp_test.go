package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A count-bound SET phase sends exactly its count, every one stored; a
// time-bound GET phase then reads them all back as hits.
func TestRESPSetThenGet(t *testing.T) {
	s := startPgcache(t)
	d := &RESP{Addr: s.Addr("resp"), Conns: 4, Pipeline: 16}
	keys := testKeys("mem:", 500)
	res, err := d.Run(context.Background(), Plan{Name: "set", Op: Set, Keys: keys, Value: value,
		Requests: uint64(len(keys)), Duration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m.Requests != 500 || m.Success != 1 || m.StatusCodes["status"] != 500 {
		t.Fatalf("set: requests %d, success %v, codes %v; want 500 at 1 with 500 status replies (errors %v)", m.Requests, m.Success, m.StatusCodes, m.Errors)
	}
	if m.Latencies.P50 <= 0 || m.Latencies.Max < m.Latencies.P99 || m.BytesOut.Total == 0 {
		t.Fatalf("set: latencies %+v, bytes out %d", m.Latencies, m.BytesOut.Total)
	}
	// Stored under the key without the route prefix: HTTP reads it back.
	resp, err := http.Get("http://" + s.Addr("http") + "/memory/get?id=key-7")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "value-7" {
		t.Fatalf("HTTP get key-7 = %d %q, want 200 value-7", resp.StatusCode, body)
	}

	start := time.Now()
	res, err = d.Run(context.Background(), Plan{Name: "get", Op: Get, Keys: keys, Duration: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a 300ms phase took %v", took)
	}
	m = res.Metrics
	if m.Requests == 0 || m.Success != 1 || m.StatusCodes["bulk"] != int(m.Requests) || res.Interrupted {
		t.Fatalf("get: requests %d, success %v, codes %v, interrupted %v", m.Requests, m.Success, m.StatusCodes, res.Interrupted)
	}
	var inTimeline uint64
	for _, sec := range res.Timeline {
		inTimeline += sec.Requests
	}
	if inTimeline != m.Requests {
		t.Fatalf("timeline holds %d requests, metrics %d", inTimeline, m.Requests)
	}
}

// A GET that misses is a failure, as HTTP's 404 is for vegeta.
func TestRESPMissFails(t *testing.T) {
	s := startPgcache(t)
	d := &RESP{Addr: s.Addr("resp"), Conns: 2, Pipeline: 4}
	res, err := d.Run(context.Background(), Plan{Name: "get", Op: Get, Keys: testKeys("mem:absent-", 10),
		Requests: 40, Duration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m.Requests != 40 || m.Success != 0 || m.StatusCodes["nil"] != 40 {
		t.Fatalf("requests %d, success %v, codes %v; want 40 nil replies, none a success", m.Requests, m.Success, m.StatusCodes)
	}
	if len(m.Errors) != 1 || !strings.Contains(m.Errors[0], "nil reply to get") {
		t.Fatalf("errors %q", m.Errors)
	}
}

// No connection ever has more than Pipeline requests unanswered: against
// a server that never replies, exactly Conns x Pipeline requests are sent,
// then the phase ends at its time bound, each counted as failed.
func TestRESPBoundsRequestsInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var received atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") {
						received.Add(1)
					}
				}
			}()
		}
	}()
	const conns, depth = 3, 5
	d := &RESP{Addr: ln.Addr().String(), Conns: conns, Pipeline: depth, Timeout: 300 * time.Millisecond}
	start := time.Now()
	res, err := d.Run(context.Background(), Plan{Name: "get", Op: Get, Keys: testKeys("", 100), Duration: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("phase took %v with a 200ms bound and a 300ms reply timeout", took)
	}
	if got := received.Load(); got != conns*depth {
		t.Fatalf("server saw %d requests, want conns x pipeline = %d", got, conns*depth)
	}
	if m := res.Metrics; m.Requests != conns*depth || m.Success != 0 {
		t.Fatalf("requests %d, success %v; want %d failed", m.Requests, m.Success, conns*depth)
	}
}

// When pgcache goes away mid-phase the driver stops at once, counting what
// was in flight as failed, instead of running to its time bound.
func TestRESPStopsWhenServerGoes(t *testing.T) {
	s := startPgcache(t)
	d := &RESP{Addr: s.Addr("resp"), Conns: 4, Pipeline: 8}
	go func() {
		time.Sleep(200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	start := time.Now()
	res, err := d.Run(context.Background(), Plan{Name: "set", Op: Set, Keys: testKeys("mem:", 100), Value: value, Duration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("phase ran %v after pgcache went away", took)
	}
	if res.Metrics.Requests == 0 {
		t.Fatal("no request measured before pgcache went away")
	}
}

// A dial failure fails the phase with the address, before any load.
func TestRESPDialError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	d := &RESP{Addr: addr, Conns: 1}
	_, err := d.Run(context.Background(), Plan{Name: "memory resp get", Op: Get, Keys: []string{"k"}, Duration: time.Second}, nil)
	if err == nil || !strings.Contains(err.Error(), "memory resp get") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want one naming the phase and %s", err, addr)
	}
}

// Cancelling ctx ends a phase early and marks it interrupted.
func TestRESPInterrupted(t *testing.T) {
	s := startPgcache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	d := &RESP{Addr: s.Addr("resp"), Conns: 2, Pipeline: 4}
	res, err := d.Run(ctx, Plan{Name: "set", Op: Set, Keys: testKeys("mem:", 10), Value: value, Duration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Metrics.Requests == 0 {
		t.Fatalf("interrupted %v after %d requests", res.Interrupted, res.Metrics.Requests)
	}
}

func TestAppendCommands(t *testing.T) {
	if got, want := string(appendGet(nil, "mem:k")), "*2\r\n$3\r\nGET\r\n$5\r\nmem:k\r\n"; got != want {
		t.Errorf("appendGet = %q, want %q", got, want)
	}
	if got, want := string(appendSet([]byte("x"), "k", []byte("a\r\nb"))), "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n"; got != want {
		t.Errorf("appendSet = %q, want %q", got, want)
	}
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     replyKind
		text     string
		size     int
		err      bool
	}{
		{name: "status", in: "+OK\r\n", kind: replyStatus, text: "OK", size: 5},
		{name: "error", in: "-ERR nope\r\n", kind: replyError, text: "ERR nope", size: 11},
		{name: "integer", in: ":12\r\n", kind: replyInt, size: 5},
		{name: "bulk", in: "$3\r\nabc\r\n", kind: replyBulk, size: 9},
		{name: "empty bulk", in: "$0\r\n\r\n", kind: replyBulk, size: 6},
		{name: "nil bulk", in: "$-1\r\n", kind: replyNil, size: 5},
		{name: "resp3 null", in: "_\r\n", kind: replyNil, size: 3},
		{name: "array", in: "*2\r\n$1\r\na\r\n:1\r\n", kind: replyArray, size: 15},
		{name: "nil array", in: "*-1\r\n", kind: replyNil, size: 5},
		{name: "bad bulk length", in: "$x\r\n", err: true},
		{name: "negative bulk length", in: "$-2\r\n", err: true},
		{name: "huge bulk length", in: "$999999999999\r\n", err: true},
		{name: "unknown type", in: "?1\r\n", err: true},
		{name: "no CR", in: "+OK\n", err: true},
		{name: "short bulk", in: "$5\r\nab", err: true},
		{name: "too deep", in: strings.Repeat("*1\r\n", 20) + ":1\r\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
			if tc.err {
				if err == nil {
					t.Fatalf("readReply(%q) = %+v, want an error", tc.in, r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.kind != tc.kind || r.text != tc.text || r.size != tc.size {
				t.Fatalf("readReply(%q) = %+v, want kind %d text %q size %d", tc.in, r, tc.kind, tc.text, tc.size)
			}
		})
	}
	// Replies back to back are read one at a time.
	br := bufio.NewReader(bytes.NewReader([]byte("+OK\r\n$1\r\nx\r\n")))
	for _, want := range []replyKind{replyStatus, replyBulk} {
		if r, err := readReply(br); err != nil || r.kind != want {
			t.Fatalf("got %+v, %v; want kind %d", r, err, want)
		}
	}
	if _, err := readReply(br); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last reply: %v, want EOF", err)
	}
}
