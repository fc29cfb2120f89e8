package backendtest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Concurrent writes of collections: Do is atomic with respect to every
// other write of its keys, so writes of one key from many goroutines lose
// nothing, and moves between two keys lose and duplicate nothing.

// tryExec is exec for a goroutine that is not the test's: a reply that is
// not want is returned as an error.
func tryExec(t *testing.T, b backends.Backend, line, want string) error {
	if got := (&storeTarget{b: b}).do(t, 2, coll.Args(line)); string(got) != want {
		return fmt.Errorf("%s = %q, want %q", line, got, want)
	}
	return nil
}

// concurrently runs fn(w, i) for i < each in each of workers goroutines,
// and fails with the first error.
func concurrently(t *testing.T, workers, each int, fn func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testCollConcurrent(t *testing.T, b backends.Backend) {
	s, h, l, z, zi := tagged(t, "s"), tagged(t, "h"), tagged(t, "l"), tagged(t, "z"), tagged(t, "zi")
	const workers, each = 4, 25
	concurrently(t, workers, each, func(w, i int) error {
		m := fmt.Sprintf("m%d-%d", w, i)
		for _, c := range []struct{ line, want string }{
			{"SADD " + s + " " + m, ":1\r\n"},
			{"ZADD " + z + " " + strconv.Itoa(i) + " " + m, ":1\r\n"},
		} {
			if err := tryExec(t, b, c.line, c.want); err != nil {
				return err
			}
		}
		// Replies that depend on the other writers: only their shape.
		for _, line := range []string{"HINCRBY " + h + " n 1", "LPUSH " + l + " " + m, "ZINCRBY " + zi + " 1 m"} {
			got := (&storeTarget{b: b}).do(t, 2, coll.Args(line))
			if n, err := parseReply(got); err != nil || n.isError() {
				return fmt.Errorf("%s = %q", line, got)
			}
		}
		return nil
	})
	const total = workers * each
	expect(t, b, "SCARD "+s, ":"+strconv.Itoa(total))
	expect(t, b, "HGET "+h+" n", fmt.Sprintf("$%d %d", len(strconv.Itoa(total)), total))
	expect(t, b, "LLEN "+l, ":"+strconv.Itoa(total))
	expect(t, b, "ZCARD "+z, ":"+strconv.Itoa(total))
	expect(t, b, "ZSCORE "+zi+" m", fmt.Sprintf("$%d %d", len(strconv.Itoa(total)), total))
	// Every push is there once.
	n, err := parseReply([]byte(exec(t, b, "LRANGE "+l+" 0 -1")))
	noErr(t, err)
	got := n.leaves()
	slices.Sort(got)
	if len(slices.Compact(got)) != total {
		t.Fatalf("LRANGE has %d distinct elements, want %d", len(slices.Compact(got)), total)
	}
}

// testCollConcurrentMoves: LMOVE and SMOVE between two keys from several
// goroutines, in both directions: every element is in one of them, once.
func testCollConcurrentMoves(t *testing.T, b backends.Backend) {
	l1, l2, s1, s2 := tagged(t, "l1"), tagged(t, "l2"), tagged(t, "s1"), tagged(t, "s2")
	const n = 40
	var elems []string
	for i := range n {
		elems = append(elems, fmt.Sprintf("e%02d", i))
	}
	pushAll := "RPUSH " + l1
	addAll := "SADD " + s1
	for _, e := range elems {
		pushAll += " " + e
		addAll += " " + e
	}
	expect(t, b, pushAll, ":"+strconv.Itoa(n))
	expect(t, b, addAll, ":"+strconv.Itoa(n))
	const workers, each = 4, 15
	concurrently(t, workers, each, func(w, i int) error {
		from, to := l1, l2
		if w%2 == 1 {
			from, to = l2, l1
		}
		got := (&storeTarget{b: b}).do(t, 2, coll.Args("LMOVE "+from+" "+to+" LEFT RIGHT"))
		if r, err := parseReply(got); err != nil || r.isError() {
			return fmt.Errorf("LMOVE = %q", got)
		}
		from, to = s1, s2
		if w%2 == 1 {
			from, to = s2, s1
		}
		got = (&storeTarget{b: b}).do(t, 2, coll.Args("SMOVE "+from+" "+to+" "+elems[(w*each+i)%n]))
		if r, err := parseReply(got); err != nil || r.isError() {
			return fmt.Errorf("SMOVE = %q", got)
		}
		return nil
	})
	union := func(reads ...string) []string {
		var all []string
		for _, line := range reads {
			r, err := parseReply([]byte(exec(t, b, line)))
			noErr(t, err)
			all = append(all, r.leaves()...)
		}
		slices.Sort(all)
		return all
	}
	if got := union("LRANGE "+l1+" 0 -1", "LRANGE "+l2+" 0 -1"); !slices.Equal(got, elems) {
		t.Fatalf("the two lists hold %q, want each of %q once", got, elems)
	}
	if got := union("SMEMBERS "+s1, "SMEMBERS "+s2); !slices.Equal(got, elems) {
		t.Fatalf("the two sets hold %q, want each of %q once", got, elems)
	}
}
