package memory

import (
	"context"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
)

// TestScratchConformance: a Scratch answers as every backend does.
func TestScratchConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		s := NewScratch(nil)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestScratchPeek: Peek gives the exact deadline written, and nothing for
// an absent or expired key.
func TestScratchPeek(t *testing.T) {
	ctx := context.Background()
	s := NewScratch(nil)
	defer s.Close()
	at := time.Now().Add(time.Hour)
	s.Set(ctx, "k", []byte("v"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLAt, At: at}})
	s.Set(ctx, "p", []byte("w"), backends.SetOptions{})
	s.Set(ctx, "gone", []byte("x"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: time.Millisecond}})
	time.Sleep(2 * time.Millisecond) // past gone's deadline
	if v, exp, ok := s.Peek("k"); !ok || string(v) != "v" || exp != at.UnixNano() {
		t.Errorf("Peek(k) = %q, %d, %v; want v, %d", v, exp, ok, at.UnixNano())
	}
	if v, exp, ok := s.Peek("p"); !ok || string(v) != "w" || exp != 0 {
		t.Errorf("Peek(p) = %q, %d, %v; want w, 0", v, exp, ok)
	}
	for _, k := range []string{"gone", "none"} {
		if _, _, ok := s.Peek(k); ok {
			t.Errorf("Peek(%s) found it", k)
		}
	}
}
