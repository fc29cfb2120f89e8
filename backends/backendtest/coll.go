package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Collections: hashes, sets, sorted sets and lists, run through
// Backend.Do. The expected replies are those of a reference: the same Ops
// run on values the test holds (coll.Slots, as package coll's differential
// tests do), which are Redis 7's replies byte for byte (coll's tests
// compare them with redis-server, and this package's own test runs every
// script here against redis-server too). So a store answers a script
// exactly as the memory semantics do, in RESP2 and RESP3, with three
// allowances where Redis itself leaves things open:
//
//   - a hash or set Redis keeps in a hash table answers HGETALL, SMEMBERS,
//     SUNION… in its table's order, which a store that rebuilds the value
//     (PostgreSQL reads it back from rows) may not share: those replies
//     are compared as sets whenever the reference's value is so encoded;
//     a small one (listpack, intset) must match in order;
//   - HSCAN, SSCAN and ZSCAN of a large value page by cursors that are
//     the store's own: the whole scan is run on both sides, and what it
//     returned compared as a set;
//   - SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER pick at random: their
//     replies are compared by shape (kinds and sizes), each pick must be
//     a member (with its value or score), and distinct where Redis says
//     so; after SPOP the reference removes what the store popped.

// runCollections runs the scripts and the key-level cases of collections.
func runCollections(t *testing.T, open func(t *testing.T) backends.Backend, o *options) {
	if !runScripts(t, open, false, o) {
		return
	}
	runSubtests(t, open, []subtest{
		{"StringCommands", testCollStringCommands},
		{"SetReplaces", testCollSetReplaces},
		{"DelExists", testCollDelExists},
		{"EmptyKey", testCollEmptyKey},
		{"TTL", testCollTTL},
		{"Expiry", testCollExpiry},
		{"Copy", testCollCopy},
		{"Seq", testCollSeq},
		{"Scan", testCollScan},
		{"Concurrent", testCollConcurrent},
		{"ConcurrentMoves", testCollConcurrentMoves},
		{"Emptied", func(t *testing.T, b backends.Backend) { testCollEmptied(t, b, o) }},
		{"Created", func(t *testing.T, b backends.Backend) { testCollCreated(t, b, o) }},
		{"Flush", testCollFlush}, // last: it empties the store
	})
}

// runScripts runs every script through open's stores; generic hides each
// Op's type, so a store runs it through its generic path, not a statement
// of its own. It reports false, and runs none, when the store's Do does
// not work at all: every case would fail the same way, and one failure
// says it.
func runScripts(t *testing.T, open func(t *testing.T) backends.Backend, generic bool, o *options) bool {
	if !t.Run("Do", func(t *testing.T) { testCollDo(t, &storeTarget{b: open(t), generic: generic}) }) {
		return false
	}
	for _, s := range scripts {
		if s.fromSize && o.encodingFromSize {
			continue // see EncodingFromSize
		}
		t.Run(s.name, func(t *testing.T) {
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
					st := &storeTarget{b: open(t), generic: generic}
					runScript(t, st, proto, tagged(t, ""), s)
				})
			}
		})
	}
	return true
}

// testCollDo: Do works at all (an HSET and an HGET).
func testCollDo(t *testing.T, st *storeTarget) {
	k := tagged(t, "h")
	got := st.do(t, 2, coll.Args("HSET "+k+" f v"))
	if string(got) != ":1\r\n" {
		if strings.Contains(string(got), backends.ErrUnsupported.Error()) {
			t.Fatalf("HSET = %q: the store does not run commands on collections (Do), so every case of Collections would fail; none is run", got)
		}
		t.Fatalf("HSET = %q, want :1", got)
	}
	if got := st.do(t, 2, coll.Args("HGET "+k+" f")); string(got) != "$1\r\nv\r\n" {
		t.Fatalf("HGET after HSET = %q, want v", got)
	}
}

// parsers are the commands scripts may use, by lowercase name: every one of
// parse makes a request's Command, checking its arity as the command
// command is parse of words.
func command(t *testing.T, words ...string) coll.Command {
	t.Helper()
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return parse(t, args)
}

// keysOf are a request's keys, in the order of its Op's View.
func keysOf(args [][]byte, at []int) []string {
	keys := make([]string, len(at))
	for i, j := range at {
		keys[i] = string(args[j])
	}
	return keys
}

// render is the reply of op once run (err: what Do returned) in RESP: the

// prefixed is a script's request with its keys named under prefix (so that
// each subtest's keys are its own, in one hash slot), and its keys.
func prefixed(t *testing.T, prefix string, args [][]byte) (out [][]byte, keys []string) {
	t.Helper()
	var at []int
	switch strings.ToLower(string(args[0])) {
	case "set", "get":
		at = []int{1}
	case "del", "exists":
		at = seq(1, len(args))
	case "copy", "rename":
		at = []int{1, 2}
	default:
		at = parse(t, args).Request().KeyAt
	}
	out = slices.Clone(args)
	for _, i := range at {
		out[i] = append([]byte(prefix), args[i]...)
		keys = append(keys, string(out[i]))
	}
	return out, keys
}

// How a reply is compared with the reference's.
type mode uint8

const (
	exact     mode = iota
	unordered      // as a set of chunks (a hash table's order is the store's)
	scanned        // the whole scan, as a set
	random         // by shape and membership
)

// compareMode is how the reply to args (prefixed) is compared: exact
// unless the reference says Redis leaves it open; width is how many
// scalars make one member (a field and its value).
func compareMode(ref *refDB, args [][]byte, keys []string) (m mode, width int) {
	name := strings.ToLower(string(args[0]))
	withValues := len(args) > 3 && (strings.EqualFold(string(args[len(args)-1]), "withvalues") ||
		strings.EqualFold(string(args[len(args)-1]), "withscores"))
	switch name {
	case "spop", "srandmember":
		return random, 1
	case "hrandfield", "zrandmember":
		if withValues {
			return random, 2
		}
		return random, 1
	case "hscan", "zscan", "sscan":
		scans := map[string]backends.Type{"hscan": backends.TypeHash, "sscan": backends.TypeSet, "zscan": backends.TypeZSet}
		if v := ref.vals[keys[0]]; v != nil && v.Type() == scans[name] && !ref.small(keys[0]) {
			if name == "sscan" {
				return scanned, 1
			}
			return scanned, 2
		}
	case "hkeys", "hvals", "hgetall", "smembers", "sinter", "sunion", "sdiff":
		for _, k := range keys {
			if !ref.small(k) {
				if name == "hgetall" {
					return unordered, 2
				}
				return unordered, 1
			}
		}
	}
	return exact, 1
}

// runScript runs lines on st and on a fresh reference, in protocol proto,
// with every key under prefix, and compares each reply; then the values
// of every key the script named.
func runScript(t *testing.T, st target, proto int, prefix string, s script) {
	t.Helper()
	ref := newRefDB()
	var named []string
	failures := 0
	defer func() {
		if failures > 0 && s.note != "" {
			t.Log(s.note)
		}
	}()
	for n, line := range s.lines {
		args, keys := prefixed(t, prefix, coll.Args(line))
		for _, k := range keys {
			if !slices.Contains(named, k) {
				named = append(named, k)
			}
		}
		if err := step(t, st, ref, proto, args, keys); err != nil {
			t.Errorf("RESP%d line %d: %s\n%v", proto, n+1, line, err)
			if failures++; failures == 10 {
				t.Fatal("ten replies differ: the script stops here")
			}
		}
	}
	for _, k := range named {
		for _, args := range dumpOf(ref, k) {
			if err := step(t, st, ref, proto, args, []string{k}); err != nil {
				t.Errorf("RESP%d at the end, %s:\n%v", proto, args, err)
				failures++
			}
		}
	}
}

// dumpOf are the requests that read k whole, by the reference's type.
func dumpOf(ref *refDB, k string) [][][]byte {
	reqs := [][][]byte{{[]byte("TYPE"), []byte(k)}, {[]byte("EXISTS"), []byte(k)}}
	if _, ok := ref.strs[k]; ok {
		return append(reqs, [][]byte{[]byte("GET"), []byte(k)})
	}
	v := ref.vals[k]
	if v == nil {
		return reqs
	}
	switch v.Type() {
	case backends.TypeHash:
		reqs = append(reqs, coll.Args("HGETALL "+k), coll.Args("HLEN "+k))
	case backends.TypeSet:
		reqs = append(reqs, coll.Args("SMEMBERS "+k), coll.Args("SCARD "+k))
	case backends.TypeZSet:
		reqs = append(reqs, coll.Args("ZRANGE "+k+" 0 -1 WITHSCORES"))
	case backends.TypeList:
		reqs = append(reqs, coll.Args("LRANGE "+k+" 0 -1"))
	}
	return reqs
}

// step runs one request on st and the reference and compares the replies.
func step(t *testing.T, st target, ref *refDB, proto int, args [][]byte, keys []string) error {
	t.Helper()
	m, width := compareMode(ref, args, keys)
	switch m {
	case scanned:
		return sameScan(t, st, ref, proto, args, width)
	case random:
		return sameRandom(t, st, ref, proto, args, keys, width)
	}
	got := st.do(t, proto, args)
	want := ref.do(t, proto, args)
	if bytes.Equal(got, want) {
		return nil
	}
	if m == unordered {
		g, err1 := parseReply(got)
		w, err2 := parseReply(want)
		if err1 == nil && err2 == nil && g.shape() == w.shape() && !g.isError() &&
			sameSet(g.chunks(width), w.chunks(width)) {
			return nil
		}
	}
	return fmt.Errorf(" got %q\nwant %q", short(string(got)), short(string(want)))
}

// sameSet reports whether a and b hold the same strings as many times.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// sameScan runs a whole scan (args: a first page, cursor 0) on both
// sides and compares what they returned, as sets.
func sameScan(t *testing.T, st target, ref *refDB, proto int, args [][]byte, width int) error {
	t.Helper()
	all := func(tg target) (map[string]bool, error) {
		got := map[string]bool{}
		req := slices.Clone(args)
		for pages := 0; ; pages++ {
			if pages > 10_000 {
				return nil, errors.New("the scan does not end")
			}
			b := tg.do(t, proto, req)
			n, err := parseReply(b)
			switch {
			case err != nil:
				return nil, fmt.Errorf("reply %q: %v", short(string(b)), err)
			case n.isError():
				return nil, fmt.Errorf("%s", b)
			case len(n.elems) != 2:
				return nil, fmt.Errorf("a scan's reply of %d elements: %q", len(n.elems), short(string(b)))
			}
			for _, c := range n.elems[1].chunks(width) {
				got[c] = true
			}
			cur := n.elems[0].leaves()[0]
			if cur == "0" {
				return got, nil
			}
			req[2] = []byte(cur)
		}
	}
	want, err := all(ref)
	if err != nil {
		return fmt.Errorf("the reference's scan: %v", err)
	}
	got, err := all(st)
	if err != nil {
		return err
	}
	var missing, extra []string
	for c := range want {
		if !got[c] {
			missing = append(missing, c)
		}
	}
	for c := range got {
		if !want[c] {
			extra = append(extra, c)
		}
	}
	if len(missing)+len(extra) > 0 {
		return fmt.Errorf("the whole scan: missing %q, extra %q", missing, extra)
	}
	return nil
}

// sameRandom runs a random pick on both sides: the replies must have the
// same shape, each pick of the store's must be a member of the value
// before (with its value or score), and distinct unless a negative count
// allows repeats. After SPOP the reference removes what the store popped,
// so both hold the same again.
func sameRandom(t *testing.T, st target, ref *refDB, proto int, args [][]byte, keys []string, width int) error {
	t.Helper()
	k := keys[0]
	name := strings.ToLower(string(args[0]))
	var before backends.Value
	if v := ref.vals[k]; v != nil {
		before = v.Clone()
	}
	members := membersOf(before, width)
	got := st.do(t, proto, args)
	want := ref.do(t, proto, args)
	g, err := parseReply(got)
	if err != nil {
		return fmt.Errorf("reply %q: %v", short(string(got)), err)
	}
	w, err := parseReply(want)
	if err != nil {
		return fmt.Errorf("the reference's reply %q: %v", short(string(want)), err)
	}
	if g.isError() || w.isError() {
		if !bytes.Equal(got, want) {
			return fmt.Errorf(" got %q\nwant %q", short(string(got)), short(string(want)))
		}
		return nil
	}
	if g.shape() != w.shape() {
		return fmt.Errorf("shape %q, want %q:\n got %q\nwant %q", g.shape(), w.shape(), short(string(got)), short(string(want)))
	}
	distinct := len(args) < 3 || !strings.HasPrefix(string(args[2]), "-")
	picks := g.chunks(width)
	seen := map[string]bool{}
	for _, p := range picks {
		if !members[p] {
			return fmt.Errorf("picked %q, which is not a member (%s)", p, short(string(got)))
		}
		if distinct && seen[p] {
			return fmt.Errorf("picked %q twice (%s)", p, short(string(got)))
		}
		seen[p] = true
	}
	if name == "spop" {
		// The reference popped its own picks: it gets back its value
		// and removes the store's.
		if before == nil {
			return nil
		}
		ref.vals[k] = before
		if len(picks) > 0 {
			srem := [][]byte{[]byte("SREM"), []byte(k)}
			for _, p := range picks {
				srem = append(srem, []byte(p))
			}
			ref.do(t, proto, srem)
		}
	}
	return nil
}

// membersOf are v's members as a random pick's chunks of width: a member,
// or a member and its value (a hash's) or its score, as RESP2 and RESP3
// write it.
func membersOf(v backends.Value, width int) map[string]bool {
	m := map[string]bool{}
	if v == nil {
		return m
	}
	coll.Each(v, func(it coll.Member) bool {
		name := string(it.Member)
		switch {
		case width == 1:
			m[name] = true
		case v.Type() == backends.TypeZSet:
			for _, proto := range []int{2, 3} {
				w := &coll.RESPBuffer{Proto: proto}
				w.Double(it.Score)
				n, _ := parseReply(w.Bytes())
				m[name+"\x00"+n.leaves()[0]] = true
			}
		default:
			m[name+"\x00"+string(it.Value)] = true
		}
		return true
	})
	return m
}
