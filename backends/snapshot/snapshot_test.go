package snapshot

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

func TestUnique(t *testing.T) {
	got := Unique([]string{"b", "a", "b", "c", "a"})
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Unique = %q, want %q", got, want)
	}
}

// TestRunWrites: the writes are exactly the keys whose value or lifetime
// fn changed, with lifetimes measured from the load instant.
func TestRunWrites(t *testing.T) {
	ctx := context.Background()
	const hour = time.Hour
	persistent := backends.TTLPersistent
	type ex = backends.Expiring
	for _, tc := range []struct {
		name  string
		state ex // the key "k" as loaded
		fn    func(tx backends.Backend) error
		want  []Write // TTL of a write: checked as "about", see below
	}{
		{"untouched", ex{Val: []byte("v"), TTL: hour}, func(backends.Backend) error { return nil }, nil},
		{"read only", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, _, err := tx.Get(ctx, "k")
			return err
		}, nil},
		{"same value, keepttl", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("v"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}})
			return err
		}, nil},
		{"deleted and set back", ex{Val: []byte("v"), TTL: persistent}, func(tx backends.Backend) error {
			if _, err := tx.Del(ctx, []string{"k"}); err != nil {
				return err
			}
			_, err := tx.Set(ctx, "k", []byte("v"), backends.SetOptions{})
			return err
		}, nil},
		{"new value keeps the deadline", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("w"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}})
			return err
		}, []Write{{Key: "k", Val: []byte("w"), TTL: hour, Existed: true, TTLKept: true}}},
		{"plain set drops the deadline", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("w"), backends.SetOptions{})
			return err
		}, []Write{{Key: "k", Val: []byte("w"), TTL: persistent, Existed: true}}},
		{"new value, still none", ex{Val: []byte("v"), TTL: persistent}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("w"), backends.SetOptions{})
			return err
		}, []Write{{Key: "k", Val: []byte("w"), TTL: persistent, Existed: true, TTLKept: true}}},
		{"incr keeps the deadline", ex{Val: []byte("41"), TTL: hour}, func(tx backends.Backend) error {
			_, err := backends.DoIncrBy(ctx, tx, "k", 1)
			return err
		}, []Write{{Key: "k", Val: []byte("42"), TTL: hour, Existed: true, TTLKept: true}}},
		{"expire", ex{Val: []byte("v"), TTL: persistent}, func(tx backends.Backend) error {
			_, err := backends.DoExpire(ctx, tx, "k", backends.TTL{Mode: backends.TTLRelative, D: time.Minute}, backends.ExpireAlways)
			return err
		}, []Write{{Key: "k", Val: []byte("v"), TTL: time.Minute, Existed: true, TTLOnly: true}}},
		{"persist", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, err := backends.DoExpire(ctx, tx, "k", backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
			return err
		}, []Write{{Key: "k", Val: []byte("v"), TTL: persistent, Existed: true, TTLOnly: true}}},
		{"delete", ex{Val: []byte("v"), TTL: hour}, func(tx backends.Backend) error {
			_, err := tx.Del(ctx, []string{"k"})
			return err
		}, []Write{{Key: "k", Existed: true}}},
		{"create", ex{}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("n"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: time.Minute}})
			return err
		}, []Write{{Key: "k", Val: []byte("n"), TTL: time.Minute}}},
		{"create empty", ex{}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte{}, backends.SetOptions{})
			return err
		}, []Write{{Key: "k", Val: []byte{}, TTL: persistent}}},
		{"absent stays absent", ex{}, func(tx backends.Backend) error {
			_, err := tx.Del(ctx, []string{"k"})
			return err
		}, nil},
		{"expired at the load", ex{Val: []byte("v"), TTL: -time.Second}, func(tx backends.Backend) error {
			if _, ok, _ := tx.Get(ctx, "k"); ok {
				return errors.New("fn saw a key whose deadline had passed")
			}
			return nil
		}, []Write{{Key: "k", Existed: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got, err := Run(nil, []string{"k"}, []backends.Expiring{tc.state}, start, tc.fn)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("writes = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				// A lifetime fn set is measured from fn's now, a little
				// after the load instant; a kept one is exact.
				if w.TTL > 0 && g.TTL >= w.TTL && g.TTL < w.TTL+time.Since(start)+time.Millisecond {
					g.TTL = w.TTL
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("write = %+v, want %+v", g, w)
				}
			}
		})
	}
}

// TestRunKeptDeadlineExact: a lifetime fn kept is written back exactly as
// loaded, so a store that measures both from one instant keeps the deadline.
func TestRunKeptDeadlineExact(t *testing.T) {
	ctx := context.Background()
	const ttl = 1234567 * time.Microsecond
	got, err := Run(nil, []string{"k"}, []backends.Expiring{{Val: []byte("1"), TTL: ttl}}, time.Now(), func(tx backends.Backend) error {
		_, err := backends.DoIncrBy(ctx, tx, "k", 1)
		return err
	})
	if err != nil || len(got) != 1 || got[0].TTL != ttl || !got[0].TTLKept {
		t.Fatalf("writes = %+v, %v; want one with TTL exactly %v", got, err, ttl)
	}
}

// TestRunError: fn's error comes back as it is, with no writes.
func TestRunError(t *testing.T) {
	ctx := context.Background()
	boom := backends.Refusal("ERR boom")
	got, err := Run(nil, []string{"a", "b"}, []backends.Expiring{{}, {Val: []byte("v"), TTL: backends.TTLPersistent}}, time.Now(),
		func(tx backends.Backend) error {
			tx.Set(ctx, "a", []byte("x"), backends.SetOptions{})
			tx.Del(ctx, []string{"b"})
			return boom
		})
	if err != boom || got != nil {
		t.Fatalf("Run = %+v, %v; want no writes and %v", got, err, boom)
	}
}

// TestUndeclared: every call naming a key the run did not declare fails
// with ErrUndeclaredKey and changes nothing.
func TestUndeclared(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(tx backends.Backend) error{
		"get": func(tx backends.Backend) error { _, _, err := tx.Get(ctx, "x"); return err },
		"mget": func(tx backends.Backend) error {
			_, err := tx.MGet(ctx, []string{"a", "x"}, nil)
			return err
		},
		"set": func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "x", []byte("v"), backends.SetOptions{})
			return err
		},
		"mset": func(tx backends.Backend) error {
			return tx.MSet(ctx, []backends.KV{{Key: "a", Val: []byte("1")}, {Key: "x", Val: []byte("1")}})
		},
		"del":    func(tx backends.Backend) error { _, err := tx.Del(ctx, []string{"a", "x"}); return err },
		"exists": func(tx backends.Backend) error { _, err := tx.Exists(ctx, []string{"x"}); return err },
		"update": func(tx backends.Backend) error { _, err := backends.DoIncrBy(ctx, tx, "x", 1); return err },
		"ttl":    func(tx backends.Backend) error { _, err := tx.TTL(ctx, "x"); return err },
		"getwithttl": func(tx backends.Backend) error {
			_, _, _, err := tx.(backends.ExpiryReader).GetWithTTL(ctx, "x")
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var callErr error
			writes, err := Run(nil, []string{"a"}, []backends.Expiring{{Val: []byte("0"), TTL: backends.TTLPersistent}}, time.Now(),
				func(tx backends.Backend) error {
					callErr = call(tx)
					return nil // the store's caller decides; the scratch must be untouched
				})
			if err != nil || len(writes) != 0 {
				t.Errorf("writes = %+v, %v; want none", writes, err)
			}
			if !errors.Is(callErr, backends.ErrUndeclaredKey) {
				t.Errorf("%s of an undeclared key = %v, want ErrUndeclaredKey", name, callErr)
			}
		})
	}
}

// BenchmarkRun: the cost of a run of two keys beyond the store's round
// trips (the scratch store is made and dropped each time).
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	state := []backends.Expiring{{Val: []byte("1"), TTL: backends.TTLPersistent}, {Val: []byte("2"), TTL: time.Hour}}
	for b.Loop() {
		_, err := Run(nil, []string{"a", "b"}, state, time.Now(), func(tx backends.Backend) error {
			_, err := backends.DoIncrBy(ctx, tx, "a", 1)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// reader is an ExpiryReader of fixed entries, one per key asked.
type reader map[string]backends.Expiring

func (r reader) GetWithTTL(context.Context, string) ([]byte, time.Duration, bool, error) {
	return nil, 0, false, errors.New("not used")
}

func (r reader) MGetWithTTL(_ context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	for _, k := range keys {
		dst = append(dst, r[k])
	}
	return dst, nil
}

// TestReadOnlyCollectionNotLoaded: a key its reader reports as a
// collection without loading it is refused before fn runs (it was taken
// for an empty string, and the run's diff then "wrote" it: EXEC of LRANGE
// on a PostgreSQL route failed so); one loaded whole is read.
func TestReadOnlyCollectionNotLoaded(t *testing.T) {
	ctx := context.Background()
	r := reader{
		"s": {Val: []byte("v"), TTL: backends.TTLPersistent},
		"l": {Type: backends.TypeList, TTL: backends.TTLPersistent},
	}
	ran := false
	err := ReadOnly(ctx, r, []string{"s", "l"}, func(backends.Backend) error { ran = true; return nil })
	if !errors.Is(err, ErrCollection) || ran {
		t.Fatalf("ReadOnly over a collection not loaded: %v, fn ran %v; want ErrCollection before fn", err, ran)
	}
	if err := ReadOnly(ctx, r, []string{"s"}, func(tx backends.Backend) error {
		v, ok, err := tx.Get(ctx, "s")
		if err != nil || !ok || string(v) != "v" {
			t.Errorf("Get s = %q %v %v", v, ok, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("ReadOnly of a string: %v", err)
	}
}
