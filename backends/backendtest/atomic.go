package backendtest

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// RunAtomic runs the contract of backends.Atomic against a store that has
// it (found with backends.As), collections included (coll_atomic.go).
// Each subtest's keys share a hash tag, so a cluster puts them in one
// slot.
func RunAtomic(t *testing.T, open func(t *testing.T) backends.Backend, opts ...Option) {
	o := newOptions(opts)
	atomic := func(fn func(t *testing.T, b backends.Backend, a backends.Atomic)) func(t *testing.T, b backends.Backend) {
		return func(t *testing.T, b backends.Backend) { fn(t, b, capability[backends.Atomic](t, b)) }
	}
	runSubtests(t, open, []subtest{
		{"ReadsOwnWrites", atomic(testAtomicReadsOwnWrites)},
		{"ErrorWritesNothing", atomic(testAtomicErrorWritesNothing)},
		{"Undeclared", atomic(testAtomicUndeclared)},
		{"TTL", atomic(testAtomicTTL)},
		{"Concurrent", atomic(testAtomicConcurrent)},
		{"CollReadsOwnWrites", atomic(testAtomicCollReadsOwnWrites)},
		{"CollErrorWritesNothing", atomic(func(t *testing.T, b backends.Backend, a backends.Atomic) {
			testAtomicCollErrorWritesNothing(t, b, a, o)
		})},
		{"CollConcurrent", atomic(testAtomicCollConcurrent)},
		{"CollMixed", atomic(testAtomicCollMixed)},
	})
}

// tagged is key with the running subtest's hash tag.
func tagged(t *testing.T, name string) string {
	return fmt.Sprintf("{%s}%s", t.Name(), name)
}

// testAtomicReadsOwnWrites: fn sees its own writes, including deletions
// and keys named twice, and the store holds them after.
func testAtomicReadsOwnWrites(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	k1, k2, k3 := tagged(t, "1"), tagged(t, "2"), tagged(t, "3")
	set(t, b, k2, "old", backends.SetOptions{})
	noErr(t, a.Atomically(c, []string{k1, k2, k3, k1}, func(tx backends.Backend) error {
		if _, err := tx.Set(c, k1, []byte("a"), backends.SetOptions{}); err != nil {
			return err
		}
		if _, err := tx.Del(c, []string{k2}); err != nil {
			return err
		}
		if _, err := backends.DoIncrBy(c, tx, k3, 5); err != nil {
			return err
		}
		vals, err := tx.MGet(c, []string{k1, k2, k3}, nil)
		if err != nil {
			return err
		}
		if string(vals[0]) != "a" || vals[1] != nil || string(vals[2]) != "5" {
			return fmt.Errorf("fn read back %q, want [a nil 5]", vals)
		}
		return nil
	}))
	wantGet(t, b, k1, "a", true)
	wantGet(t, b, k2, "", false)
	wantGet(t, b, k3, "5", true)
}

// testAtomicErrorWritesNothing: fn's error comes back as it is, and none
// of its writes is stored.
func testAtomicErrorWritesNothing(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	k1, k2 := tagged(t, "1"), tagged(t, "2")
	set(t, b, k1, "1", backends.SetOptions{})
	boom := backends.Refusal("ERR boom")
	err := a.Atomically(c, []string{k1, k2}, func(tx backends.Backend) error {
		if _, err := tx.Set(c, k1, []byte("2"), backends.SetOptions{}); err != nil {
			return err
		}
		if _, err := tx.Set(c, k2, []byte("new"), backends.SetOptions{}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Atomically = %v, want fn's error %v as it is", err, boom)
	}
	wantGet(t, b, k1, "1", true)
	wantGet(t, b, k2, "", false)
}

// testAtomicUndeclared: a store that refuses undeclared keys does so with
// ErrUndeclaredKey.
func testAtomicUndeclared(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	k, other := tagged(t, "1"), tagged(t, "other")
	err := a.Atomically(c, []string{k}, func(tx backends.Backend) error {
		_, _, err := tx.Get(c, other)
		return err
	})
	if err != nil && !errors.Is(err, backends.ErrUndeclaredKey) {
		t.Fatalf("Get of an undeclared key = %v, want nil or ErrUndeclaredKey", err)
	}
}

// testAtomicTTL: lifetimes fn did not change survive; those it set hold.
func testAtomicTTL(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	keep, kept, fresh, persist := tagged(t, "keep"), tagged(t, "kept"), tagged(t, "fresh"), tagged(t, "persist")
	for _, k := range []string{keep, kept, persist} {
		set(t, b, k, "v", backends.SetOptions{TTL: rel(time.Hour)})
	}
	noErr(t, a.Atomically(c, []string{keep, kept, fresh, persist}, func(tx backends.Backend) error {
		if _, _, err := tx.Get(c, keep); err != nil {
			return err
		}
		if _, err := tx.Set(c, kept, []byte("w"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}}); err != nil {
			return err
		}
		if _, err := tx.Set(c, fresh, []byte("w"), backends.SetOptions{TTL: rel(100 * time.Second)}); err != nil {
			return err
		}
		_, err := backends.DoExpire(c, tx, persist, backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
		return err
	}))
	for k, want := range map[string]time.Duration{keep: time.Hour, kept: time.Hour, fresh: 100 * time.Second} {
		if got := ttl(t, b, k); got <= want-10*time.Second || got > want {
			t.Errorf("TTL %s = %v, want about %v", k, got, want)
		}
	}
	wantGet(t, b, kept, "w", true)
	if got := ttl(t, b, persist); got != backends.TTLPersistent {
		t.Errorf("TTL %s = %v, want none", persist, got)
	}
}

// testAtomicConcurrent: runs moving units between two keys lose none, and
// a run that only reads both keys, concurrent with them, always sees the
// same sum: no run sees part of another's writes.
func testAtomicConcurrent(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	x, y := tagged(t, "x"), tagged(t, "y")
	const total, workers, each = 100, 3, 30
	mset(t, b, backends.KV{Key: x, Val: []byte(strconv.Itoa(total))}, backends.KV{Key: y, Val: []byte("0")})
	readWhileWriting(t, workers, each, func(_, _ int) error {
		return a.Atomically(c, []string{x, y}, func(tx backends.Backend) error {
			if _, err := backends.DoIncrBy(c, tx, x, -1); err != nil {
				return err
			}
			_, err := backends.DoIncrBy(c, tx, y, 1)
			return err
		})
	}, func() error {
		var sum int
		err := a.Atomically(c, []string{x, y}, func(tx backends.Backend) error {
			vals, err := tx.MGet(c, []string{x, y}, nil)
			if err != nil {
				return err
			}
			vx, _ := strconv.Atoi(string(vals[0]))
			vy, _ := strconv.Atoi(string(vals[1]))
			sum = vx + vy
			return nil
		})
		if err == nil && sum != total {
			err = fmt.Errorf("a read-only run saw a sum of %d, want %d", sum, total)
		}
		return err
	})
	wantGet(t, b, x, strconv.Itoa(total-workers*each), true)
	wantGet(t, b, y, strconv.Itoa(workers*each), true)
}

// readWhileWriting runs write in workers goroutines, each times (as
// concurrently does), and read over and over beside them until they are
// done, at least once however fast they are. The first error of either
// fails the test.
func readWhileWriting(t *testing.T, workers, each int, write func(w, i int) error, read func() error) {
	t.Helper()
	stop, readErr := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(readErr)
		for reads := 0; ; reads++ {
			if reads > 0 {
				select {
				case <-stop:
					return
				default:
				}
			}
			if err := read(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	func() {
		defer close(stop) // a writer's failure stops the reader too
		concurrently(t, workers, each, write)
	}()
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
}
