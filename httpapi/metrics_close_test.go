package httpapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A scraper that hangs up after the first lines (`curl …/metrics | head`)
// is the client's choice, not a server problem: no warning, only debug.
func TestMetricsClientClosingEarlyIsNotAWarning(t *testing.T) {
	// Enough series that the answer cannot sit whole in the sockets'
	// buffers: the server is still writing when the client is gone.
	reg := prometheus.NewRegistry()
	for f := range 20 {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: fmt.Sprintf("big_family_%d", f), Help: "filler"}, []string{"series"})
		for i := range 5000 {
			g.WithLabelValues(fmt.Sprintf("series-%06d-%s", i, strings.Repeat("x", 40))).Set(float64(i))
		}
		reg.MustRegister(g)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdmin(AdminOptions{Gatherer: reg}, zap.New(core))
	served := make(chan error, 1)
	go func() { served <- a.Serve(ln) }()

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(nc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	nc.(*net.TCPConn).SetLinger(0) // hang up with a reset, as a killed curl does
	nc.Close()

	// Shutdown waits for the handler, so every line it logs is in.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil && err != http.ErrServerClosed {
		t.Fatal(err)
	}
	gone := 0
	for _, e := range logs.All() {
		if e.Level >= zapcore.WarnLevel {
			t.Errorf("%s %q %v", e.Level, e.Message, e.ContextMap())
		}
		if e.Message == "metrics: the client went away" {
			gone++
		}
	}
	if gone == 0 {
		t.Fatalf("the early close was not seen (logs: %d entries); the test did not test it", logs.Len())
	}
}
