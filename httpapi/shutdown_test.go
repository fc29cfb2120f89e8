package httpapi

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestShutdownDrains: Shutdown stops accepting, lets the request in flight
// finish (its backend call is not cancelled), and only then returns.
func TestShutdownDrains(t *testing.T) {
	b := blocking{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := startData(t, Config{}, testRoute{name: "slow", b: b}, testRoute{name: "mem"})

	answered := make(chan response, 1)
	go func() { answered <- do(t, newClient(t), "GET", s.url+"/slow/get?id=k", nil) }()
	<-b.entered

	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(context.Background()) }()

	// Stop accepting: new connections are refused once the listener closes.
	refused := false
	for range 200 {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			refused = true
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	if !refused {
		t.Error("still accepting connections after Shutdown")
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	case r := <-answered:
		t.Fatalf("request answered (%d %q) before its backend returned", r.status, r.body)
	default:
	}

	close(b.release)
	if r := <-answered; r.status != 200 || r.body != "late" || !r.close {
		t.Errorf("in-flight request: %d %q close=%v; want 200 \"late\" and Connection: close", r.status, r.body, r.close)
	}
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-s.served; err != nil {
		t.Errorf("Serve after Shutdown: %v, want nil", err)
	}
	s.served = nil
}

// TestShutdownDeadline: when Shutdown's ctx ends first, the backend call in
// flight is cancelled, its request answered 503, and Shutdown says why.
func TestShutdownDeadline(t *testing.T) {
	b := blocking{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := startData(t, Config{}, testRoute{name: "slow", b: b})

	answered := make(chan response, 1)
	go func() { answered <- do(t, newClient(t), "GET", s.url+"/slow/get?id=k", nil) }()
	<-b.entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an ended ctx: %v, want context.Canceled", err)
	}
	if r := <-answered; r.status != 503 || r.body != "backend slow-backend: context canceled\n" {
		t.Errorf("cut-short request: %d %q", r.status, r.body)
	}
}

// TestServeAfterShutdown: Serve on a shut-down server returns nil at once
// and closes the listener.
func TestServeAfterShutdown(t *testing.T) {
	d := NewData(newRouter(t, nil, testRoute{name: "mem"}), overDefaults(Config{}), nil, prometheus.NewRegistry())
	a := NewAdmin(AdminOptions{}, nil)
	for name, srv := range map[string]interface {
		Serve(net.Listener) error
		Shutdown(context.Context) error
	}{"data": d, "admin": a} {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Serve(ln); err != nil {
			t.Errorf("%s: Serve after Shutdown: %v, want nil", name, err)
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: listener still open: %v", name, err)
		}
	}
}

// TestServeListenerClosed: a listener closed by someone else is an error,
// not a shutdown.
func TestServeListenerClosed(t *testing.T) {
	d := NewData(newRouter(t, nil, testRoute{name: "mem"}), overDefaults(Config{}), nil, prometheus.NewRegistry())
	d.srv.MaxIdleWorkerDuration = 50 * time.Millisecond // see startData
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	for range 200 { // bounded: until Serve has taken the listener
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ln.Close()
	if err := <-served; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed listener: %v, want net.ErrClosed", err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestNoGoroutineLeak: after Shutdown of both servers, no goroutine of
// theirs is left, idle keep-alive connections included.
func TestNoGoroutineLeak(t *testing.T) {
	waitNoServerGoroutines(t) // earlier tests' servers are gone too
	s := startData(t, Config{})
	a := startAdmin(t, AdminOptions{Gatherer: s.reg})
	c := newClient(t)
	for range 3 {
		do(t, c, "POST", s.url+"/mem/set?id=k", nil)
		do(t, c, "GET", s.url+"/mem/get?id=k", nil)
		do(t, c, "GET", a.url+"/metrics", nil)
	}
	idle := dialRaw(t, s.addr) // a keep-alive connection left idle
	idle.write("GET /mem/get?id=k HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.read()

	s.stop(t)
	a.stop(t)
	waitNoServerGoroutines(t)
}
