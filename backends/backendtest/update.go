package backendtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// genericOnly hides each update's type from the backend, so it runs the
// update through its generic read-modify-write.
type genericOnly struct{ backends.Backend }

func (g genericOnly) Update(ctx context.Context, key string, u backends.Update) error {
	return g.Backend.Update(ctx, key, opaque{u})
}

func (g genericOnly) Unwrap() backends.Backend { return g.Backend }

type opaque struct{ backends.Update }

// appendUpdate is APPEND, an update no backend knows natively; fail makes
// it refuse once it has seen the value.
type appendUpdate struct {
	suffix string
	fail   bool
	len    int
}

var errRefused = errors.New("refused by the update")

func (*appendUpdate) Op() string { return "append" }

func (u *appendUpdate) Apply(cur backends.Current) (backends.Change, error) {
	if u.fail {
		return backends.Change{}, errRefused
	}
	v := append(append([]byte(nil), cur.Val...), u.suffix...)
	u.len = len(v)
	return backends.Change{Kind: backends.Put, Val: v, TTL: backends.TTL{Mode: backends.TTLKeep}}, nil
}

// deleteIf deletes the key when it holds want.
type deleteIf struct {
	want    string
	deleted bool
}

func (*deleteIf) Op() string { return "deleteif" }

func (u *deleteIf) Apply(cur backends.Current) (backends.Change, error) {
	u.deleted = cur.Found() && string(cur.Val) == u.want
	if !u.deleted {
		return backends.Change{}, nil
	}
	return backends.Change{Kind: backends.Delete}, nil
}

func update(t *testing.T, b backends.Backend, k string, u backends.Update) {
	t.Helper()
	noErr(t, b.Update(ctx(t), k, u))
}

func testUpdate(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	a := &appendUpdate{suffix: "ab"}
	update(t, b, k, a) // absent: created
	if a.len != 2 {
		t.Fatalf("APPEND to absent: len %d", a.len)
	}
	wantGet(t, b, k, "ab", true)
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL of a key an update created with KEEPTTL = %v, want none", d)
	}

	set(t, b, k, "x", backends.SetOptions{TTL: rel(100 * time.Second)})
	update(t, b, k, &appendUpdate{suffix: "yz"})
	wantGet(t, b, k, "xyz", true)
	if d := ttl(t, b, k); d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL after an update that keeps it = %v", d)
	}

	// An update's error changes nothing and comes back.
	if err := b.Update(ctx(t), k, &appendUpdate{fail: true}); !errors.Is(err, errRefused) {
		t.Fatalf("refusing update: %v, want %v", err, errRefused)
	}
	wantGet(t, b, k, "xyz", true)

	d := &deleteIf{want: "nope"}
	update(t, b, k, d)
	if d.deleted {
		t.Fatal("deleteIf matched the wrong value")
	}
	wantGet(t, b, k, "xyz", true)
	d = &deleteIf{want: "xyz"}
	update(t, b, k, d)
	if !d.deleted {
		t.Fatal("deleteIf did not match")
	}
	wantGet(t, b, k, "", false)
	update(t, b, k, &deleteIf{want: "xyz"}) // absent: nothing to do
}

// testUpdateConcurrent runs appends of one key from many goroutines: an
// update is atomic, so none is lost.
func testUpdateConcurrent(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	const workers, each = 8, 10
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if err := b.Update(ctx(t), k, &appendUpdate{suffix: "."}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wantGet(t, b, k, strings.Repeat(".", workers*each), true)
}
