package httpapi

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/pgcache/pgcache/backends"
)

// benchData is a Data over one memory route "mem" holding key "k".
func benchData(tb testing.TB, val []byte) *Data {
	tb.Helper()
	reg := prometheus.NewRegistry()
	d := NewData(newRouter(tb, reg, testRoute{name: "mem"}), overDefaults(Config{}), nil, reg)
	tb.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	b := d.router.Current().ByName("mem").Backend
	if _, err := b.Set(context.Background(), "k", val, backends.SetOptions{}); err != nil {
		tb.Fatal(err)
	}
	return d
}

// request fills ctx with a fresh request, as fasthttp does for each one it
// reads: the URI is parsed again, the arguments too.
func request(ctx *fasthttp.RequestCtx, method, uri string, body []byte) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	if body != nil {
		ctx.Request.SetBody(body)
	}
}

// TestGetDoesNotAllocate: the GET path, hit or miss, allocates nothing once
// warm. An allocation count is behaviour, not speed.
func TestGetDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	d := benchData(t, bytes.Repeat([]byte("v"), 100))
	var ctx fasthttp.RequestCtx
	for _, uri := range []string{"/mem/get?id=k", "/mem/get?id=absent"} {
		allocs := testing.AllocsPerRun(1000, func() {
			request(&ctx, "GET", uri, nil)
			d.handle(&ctx)
		})
		if allocs != 0 {
			t.Errorf("GET %s: %v allocs per request, want 0", uri, allocs)
		}
	}
	if got := ctx.Response.StatusCode(); got != 404 {
		t.Errorf("last status %d, want 404", got)
	}
}

func BenchmarkHandlerGet(b *testing.B) {
	d := benchData(b, bytes.Repeat([]byte("v"), 100))
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		request(&ctx, "GET", "/mem/get?id=k", nil)
		d.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}

func BenchmarkHandlerSet(b *testing.B) {
	d := benchData(b, nil)
	val := bytes.Repeat([]byte("v"), 100)
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		request(&ctx, "POST", "/mem/set?id=k", val)
		d.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 204 {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}

func BenchmarkHandlerMGet(b *testing.B) {
	d := benchData(b, bytes.Repeat([]byte("v"), 100))
	uri := "/mem/mget?id=k&id=absent"
	for i := range 8 {
		uri += "&id=k" + strconv.Itoa(i)
	}
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		request(&ctx, "GET", uri, nil)
		d.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}

// BenchmarkLoopbackGet is the whole round trip over a 127.0.0.1 keep-alive
// connection, fasthttp's client included (its allocations count here too).
func BenchmarkLoopbackGet(b *testing.B) {
	d := benchData(b, bytes.Repeat([]byte("v"), 100))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = d.Serve(ln) }()
	c := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 1}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + ln.Addr().String() + "/mem/get?id=k")
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d", resp.StatusCode())
		}
	}
	b.StopTimer()
	c.CloseIdleConnections()
}
