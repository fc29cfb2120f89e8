package proxy

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestShutdown: idle clients are closed at once; a batch being run
// finishes and its replies are written before its client is closed.
func TestShutdown(t *testing.T) {
	ts := startServer(t, Config{})
	idle, busy := dial(t, ts.addr), dial(t, ts.addr)
	idle.do("PING")
	busy.send(encode("SET", "k", "v") + encode("DEBUG-BLOCK") + encode("GET", "k"))
	<-debugBlock.entered

	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(context.Background()) }()
	if !idle.closed() {
		t.Fatal("idle client still connected during shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a batch was running", err)
	default:
	}
	debugBlock.release <- struct{}{}
	for _, want := range []string{"+OK\r\n", "+OK\r\n", "$1\r\nv\r\n"} {
		if got := busy.reply(); got != want {
			t.Errorf("in-flight batch reply = %q, want %q", got, want)
		}
	}
	if !busy.closed() {
		t.Error("client still connected after its batch")
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := <-ts.errc; err != nil {
		t.Errorf("Serve = %v after Shutdown", err)
	}
	ts.errc = nil
	ts.driver.Close()

	// Serve on a new listener returns at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Serve(ln); err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
}

// TestShutdownEndsBlockedCommands: a client blocked in BLPOP with no
// timeout is closed at once, as an idle one: Shutdown returns without
// waiting for its context to end (stop's ends in 10 s, an error).
func TestShutdownEndsBlockedCommands(t *testing.T) {
	ts := startServer(t, Config{BlockPoll: time.Hour})
	admin := dial(t, ts.addr)
	cs := blockAll(t, ts.addr, admin, []string{"BLPOP", "never", "0"})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ts.stop(t)
	}()
	if !cs[0].closed() {
		t.Error("blocked client still connected during shutdown")
	}
	<-stopped
}

// TestShutdownDeadline: when the context ends first, calls still running
// are cancelled, connections closed, and the context's error returned.
func TestShutdownDeadline(t *testing.T) {
	ts := startServer(t, Config{})
	busy := dial(t, ts.addr)
	busy.send(encode("DEBUG-BLOCK"))
	<-debugBlock.entered
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if !busy.closed() {
		t.Error("client still connected after a forced shutdown")
	}
	if err := <-ts.errc; err != nil {
		t.Errorf("Serve = %v", err)
	}
	ts.errc = nil
	ts.driver.Close()
}

// TestNoGoroutineLeak: after Shutdown returns, every goroutine the server
// started is gone.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	ts := startServer(t, Config{})
	var clients []*rawClient
	for i := range 20 {
		c := dial(t, ts.addr)
		c.do("SET", "k", "v")
		if i%2 == 0 {
			c.send("*2\r\n$3\r\nGET\r\n") // half a request
		}
		clients = append(clients, c)
	}
	hog := dial(t, ts.addr)
	hog.send(encode("DEBUG-BLOCK"))
	<-debugBlock.entered
	go func() { debugBlock.release <- struct{}{} }()
	ts.stop(t)
	for _, c := range clients {
		c.nc.Close()
	}
	hog.nc.Close()
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}
