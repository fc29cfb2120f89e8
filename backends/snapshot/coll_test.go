package snapshot

import (
	"context"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

func op(t *testing.T, p coll.Parser, args ...string) coll.Command {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	c, err := p(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A run changes a loaded collection in place and the write names the
// members it touched; a collection the run creates is written whole.
func TestRunCollections(t *testing.T) {
	h := coll.NewHash()
	h.Set("a", []byte("1"))
	h.Set("b", []byte("2"))
	state := []backends.Expiring{
		{TTL: time.Hour, Type: backends.TypeHash, Coll: h},
		{},
	}
	ctx := context.Background()
	writes, err := Run(nil, []string{"h", "new"}, state, time.Now(), func(tx backends.Backend) error {
		if err := tx.Do(ctx, []string{"h"}, op(t, coll.ParseHSet, "hset", "h", "b", "3", "c", "4")); err != nil {
			return err
		}
		return tx.Do(ctx, []string{"new"}, op(t, coll.ParseHSet, "hset", "new", "x", "y"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 {
		t.Fatalf("writes = %+v, want two", writes)
	}
	w := writes[0]
	if w.Key != "h" || w.Coll == nil || w.Journal == nil || !w.Existed || !w.TTLKept {
		t.Fatalf("write of h = %+v", w)
	}
	if _, ok := w.Journal.Members["b"]; !ok || len(w.Journal.Members) != 2 {
		t.Fatalf("journal of h = %v, want b and c", w.Journal.Members)
	}
	if got, _ := w.Coll.(*coll.Hash).Get("b"); string(got) != "3" {
		t.Fatalf("h's b = %q", got)
	}
	if w := writes[1]; w.Key != "new" || w.Coll == nil || w.Journal != nil || w.Existed || w.TTL != backends.TTLPersistent {
		t.Fatalf("write of new = %+v", w)
	}
	// A run that only reads writes nothing.
	writes, err = Run(nil, []string{"h"}, state[:1], time.Now(), func(tx backends.Backend) error {
		return tx.Do(ctx, []string{"h"}, op(t, coll.ParseHGet, "hget", "h", "a"))
	})
	if err != nil || len(writes) != 0 {
		t.Fatalf("a read-only run wrote %+v (%v)", writes, err)
	}
}
