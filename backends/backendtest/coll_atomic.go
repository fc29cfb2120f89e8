package backendtest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Atomic runs of collection commands (MULTI/EXEC, scripts): through tx's
// Do, a run reads its own writes, a run that fails writes nothing (where
// the store can), and runs do not interleave.

// steps runs lines on b (a run's tx) and returns an error at the first
// reply that is not its want (RESP2, shortened as expect reads it).
func steps(t *testing.T, b backends.Backend, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		line, want := pairs[i], pairs[i+1]
		got := string((&storeTarget{b: b}).do(t, 2, coll.Args(line)))
		if short := strings.ReplaceAll(strings.TrimSuffix(got, "\r\n"), "\r\n", " "); short != want {
			return fmt.Errorf("in the run, %s = %q, want %q", line, short, want)
		}
	}
	return nil
}

// testAtomicCollReadsOwnWrites: a run that writes a hash, a set, a sorted
// set and a list reads back each write, and the store holds them after.
func testAtomicCollReadsOwnWrites(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	h, s, z, l, d := tagged(t, "h"), tagged(t, "s"), tagged(t, "z"), tagged(t, "l"), tagged(t, "d")
	expect(t, b, "RPUSH "+l+" old", ":1")
	expect(t, b, "HSET "+h+" gone x", ":1")
	noErr(t, a.Atomically(c, []string{h, s, z, l, d, h}, func(tx backends.Backend) error {
		return steps(t, tx,
			"HSET "+h+" f v g w", ":2",
			"SADD "+s+" a b", ":2",
			"HGET "+h+" f", "$1 v",
			"HDEL "+h+" g gone", ":2",
			"HGETALL "+h, "*2 $1 f $1 v",
			"SISMEMBER "+s+" b", ":1",
			"SCARD "+s, ":2",
			"ZADD "+z+" 1 m", ":1",
			"ZINCRBY "+z+" 2 m", "$1 3",
			"RPUSH "+l+" new", ":2",
			"LPOP "+l, "$3 old",
			"LRANGE "+l+" 0 -1", "*1 $3 new",
			"SUNIONSTORE "+d+" "+s, ":2",
			"SREM "+d+" a", ":1",
			"TYPE "+d, "+set",
			"GET "+h, "-"+backends.ErrWrongType.Error(),
			"DEL "+s, ":1",
			"EXISTS "+s, ":0",
			"SMEMBERS "+d, "*1 $1 b",
		)
	}))
	expect(t, b, "HGETALL "+h, "*2 $1 f $1 v")
	expect(t, b, "EXISTS "+s, ":0")
	expect(t, b, "ZSCORE "+z+" m", "$1 3")
	expect(t, b, "LRANGE "+l+" 0 -1", "*1 $3 new")
	expect(t, b, "SMEMBERS "+d, "*1 $1 b")
}

// testAtomicCollErrorWritesNothing: a run that fails leaves no key it
// created, and puts back a string a *STORE replaced; a store that can
// (InPlaceKept not given) also undoes the changes made in place.
func testAtomicCollErrorWritesNothing(t *testing.T, b backends.Backend, a backends.Atomic, o *options) {
	c := ctx(t)
	e, n, str, s := tagged(t, "e"), tagged(t, "n"), tagged(t, "str"), tagged(t, "s")
	boom := backends.Refusal("ERR boom")
	for _, fail := range []struct {
		name string
		err  func(tx backends.Backend) error
		want error
	}{
		{"fn's error", func(backends.Backend) error { return boom }, boom},
		{"a command's error", func(tx backends.Backend) error {
			// WRONGTYPE, as a script's redis.call fails.
			return tx.Do(c, []string{str}, command(t, "HSET", str, "f", "v"))
		}, backends.ErrWrongType},
	} {
		del(t, b, e, s)
		expect(t, b, "HSET "+e+" f 1", ":1")
		expect(t, b, "SADD "+s+" a", ":1")
		set(t, b, str, "v", backends.SetOptions{})
		err := a.Atomically(c, []string{e, n, str, s}, func(tx backends.Backend) error {
			if err := steps(t, tx,
				"HSET "+n+" x 1", ":1",
				"HSET "+e+" f 2 g 3", ":1",
				"SADD "+s+" b", ":1",
				"SREM "+s+" a", ":1",
				"SUNIONSTORE "+str+" "+s, ":1",
			); err != nil {
				return err
			}
			return fail.err(tx)
		})
		if !errors.Is(err, fail.want) {
			t.Fatalf("%s: Atomically = %v, want %v", fail.name, err, fail.want)
		}
		expect(t, b, "EXISTS "+n, ":0")
		wantGet(t, b, str, "v", true)
		if o.inPlaceKept {
			continue
		}
		expect(t, b, "HGETALL "+e, "*2 $1 f $1 1")
		expect(t, b, "SMEMBERS "+s, "*1 $1 a")
	}
}

// testAtomicCollConcurrent: runs that LPUSH a list and ZINCRBY a sorted
// set lose nothing, and a run that reads both always sees them agree.
func testAtomicCollConcurrent(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	l, z := tagged(t, "l"), tagged(t, "z")
	const workers, each = 3, 20
	readWhileWriting(t, workers, each, func(w, i int) error {
		return a.Atomically(c, []string{l, z}, func(tx backends.Backend) error {
			if err := tx.Do(c, []string{l}, command(t, "LPUSH", l, fmt.Sprintf("%d-%d", w, i))); err != nil {
				return err
			}
			return tx.Do(c, []string{z}, command(t, "ZINCRBY", z, "1", "m"))
		})
	}, func() error {
		var n, score int64
		err := a.Atomically(c, []string{l, z}, func(tx backends.Backend) error {
			llen := command(t, "LLEN", l)
			if err := tx.Do(c, []string{l}, llen); err != nil {
				return err
			}
			zscore := command(t, "ZSCORE", z, "m")
			if err := tx.Do(c, []string{z}, zscore); err != nil {
				return err
			}
			r, _ := parseReply(render(2, llen, nil))
			n, _ = strconv.ParseInt(r.leaves()[0], 10, 64)
			r, _ = parseReply(render(2, zscore, nil))
			score = 0
			if lv := r.leaves(); len(lv) > 0 {
				score, _ = strconv.ParseInt(lv[0], 10, 64)
			}
			return nil
		})
		if err == nil && n != score {
			err = fmt.Errorf("a read-only run saw LLEN %d and ZSCORE %d: it saw part of a run", n, score)
		}
		return err
	})
	total := strconv.Itoa(workers * each)
	expect(t, b, "LLEN "+l, ":"+total)
	expect(t, b, "ZSCORE "+z+" m", fmt.Sprintf("$%d %s", len(total), total))
	r, err := parseReply([]byte(exec(t, b, "LRANGE "+l+" 0 -1")))
	noErr(t, err)
	if got := slices.Compact(slices.Sorted(slices.Values(r.leaves()))); len(got) != workers*each {
		t.Fatalf("the list holds %d distinct pushes, want %d", len(got), workers*each)
	}
}

// testAtomicCollMixed: runs and plain writes of the same members, from
// goroutines of their own, lose nothing of each other: a store whose plain
// writes take other locks than its runs (PostgreSQL's single commands)
// still orders them.
func testAtomicCollMixed(t *testing.T, b backends.Backend, a backends.Atomic) {
	c := ctx(t)
	h, z := tagged(t, "h"), tagged(t, "z")
	const workers, each = 4, 20
	incr := func(on backends.Backend) error {
		if err := on.Do(c, []string{h}, command(t, "HINCRBY", h, "n", "1")); err != nil {
			return err
		}
		return on.Do(c, []string{z}, command(t, "ZINCRBY", z, "1", "m"))
	}
	concurrently(t, workers, each, func(w, i int) error {
		if w%2 == 0 {
			return a.Atomically(c, []string{h, z}, incr)
		}
		return incr(b)
	})
	total := strconv.Itoa(workers * each)
	expect(t, b, "HGET "+h+" n", fmt.Sprintf("$%d %s", len(total), total))
	expect(t, b, "ZSCORE "+z+" m", fmt.Sprintf("$%d %s", len(total), total))
}
