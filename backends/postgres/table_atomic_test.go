package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// TestTableAtomically: a run over rows reads them, updates one, deletes
// one and inserts one in one transaction; TTL answers -1 for a row and -2
// for none (valkey-go's cached read is MULTI, PTTL, GET, EXEC); a run that
// gives a row an expiry, or fails, writes nothing.
func TestTableAtomically(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	source := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+source+" (id int PRIMARY KEY, n int)")
	sql(t, "INSERT INTO "+source+" VALUES (1, 10), (2, 20)")
	s := openTableRoute(t, d, source)

	err := s.Atomically(ctx, []string{"1", "2", "3"}, func(tx backends.Backend) error {
		if ttl, err := tx.TTL(ctx, "1"); err != nil || ttl != backends.TTLPersistent {
			return fmt.Errorf("TTL(1) = %v, %v", ttl, err)
		}
		if ttl, err := tx.TTL(ctx, "3"); err != nil || ttl != backends.TTLMissing {
			return fmt.Errorf("TTL(3) = %v, %v", ttl, err)
		}
		v, ok, err := tx.Get(ctx, "1")
		if err != nil || !ok || row(t, v)["n"] != float64(10) {
			return fmt.Errorf("Get(1) = %s, %v, %v", v, ok, err)
		}
		if _, err := tx.Set(ctx, "1", []byte(`{"n": 11}`), backends.SetOptions{}); err != nil {
			return err
		}
		if _, err := tx.Del(ctx, []string{"2"}); err != nil {
			return err
		}
		_, err = tx.Set(ctx, "3", []byte(`{"n": 30}`), backends.SetOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, "SELECT coalesce(sum(n * id), 0) FROM "+source); got != 11+90 {
		t.Fatalf("after the run, sum(n*id) = %d, want 101 (1:11, 3:30)", got)
	}
	if got := queryInt(t, "SELECT count(*) FROM "+source+" WHERE id = 2"); got != 0 {
		t.Fatal("row 2 not deleted")
	}

	boom := errors.New("boom")
	for _, fn := range []func(tx backends.Backend) error{
		func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "1", []byte(`{"n": 12}`), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: time.Minute}})
			return err
		},
		func(tx backends.Backend) error {
			tx.Set(ctx, "1", []byte(`{"n": 13}`), backends.SetOptions{})
			return boom
		},
	} {
		if err := s.Atomically(ctx, []string{"1"}, fn); err == nil {
			t.Fatal("a run that gives a row an expiry or fails succeeded")
		}
		if got := queryInt(t, "SELECT n FROM "+source+" WHERE id = 1"); got != 11 {
			t.Fatalf("a refused run wrote row 1: n = %d", got)
		}
	}
}

// TestTableAtomicallyIsolated: runs that read a row's counter and write it
// back, from many goroutines, lose no increment, while plain SQL updates
// of the same row interleave; two runs inserting one absent row both land
// (the second sees the first's row and updates it).
func TestTableAtomicallyIsolated(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	source := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+source+" (id int PRIMARY KEY, n int)")
	s := openTableRoute(t, d, source)
	incr := func(key string) func(tx backends.Backend) error {
		return func(tx backends.Backend) error {
			v, ok, err := tx.Get(ctx, key)
			if err != nil {
				return err
			}
			n := 0.0
			if ok {
				n = row(t, v)["n"].(float64)
			}
			b, _ := json.Marshal(map[string]any{"n": n + 1})
			_, err = tx.Set(ctx, key, b, backends.SetOptions{})
			return err
		}
	}
	const workers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := s.Atomically(ctx, []string{"1"}, incr("1")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // plain SQL beside the runs: +100 each, row locks order them
		defer wg.Done()
		for range each {
			if _, err := d.pool.Exec(context.Background(),
				"INSERT INTO "+source+" VALUES (1, 100) ON CONFLICT (id) DO UPDATE SET n = "+source+".n + 100"); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := queryInt(t, "SELECT n FROM "+source+" WHERE id = 1"); got != workers*each+100*each {
		t.Fatalf("n = %d, want %d: an increment was lost", got, workers*each+100*each)
	}
}
