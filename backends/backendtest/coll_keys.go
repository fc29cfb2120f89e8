package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Keys that hold collections, through the Backend's other methods: the
// string commands refuse them, SET replaces them, DEL, EXISTS, expiry,
// COPY, SCAN and FLUSH treat them as any key (coll_keyspace.go).

// exec runs a command line on b in RESP2, its keys as written, and
// returns the reply: collection commands through Do, SET, GET, DEL and
// EXISTS through the Backend's methods.
func exec(t *testing.T, b backends.Backend, line string) string {
	t.Helper()
	return string((&storeTarget{b: b}).do(t, 2, coll.Args(line)))
}

// expect runs line and fails unless the reply is want (RESP2, with the
// "\r\n" of each line written as spaces for short: ":1", "$1 v").
func expect(t *testing.T, b backends.Backend, line, want string) {
	t.Helper()
	if got := exec(t, b, line); strings.ReplaceAll(strings.TrimSuffix(got, "\r\n"), "\r\n", " ") != want {
		t.Fatalf("%s = %q, want %q", line, got, want)
	}
}

// fillers are, by type, a command that makes k hold two members, one that
// adds a third in place, the command that reads the value whole, and
// whether its reply is unordered.
type filler struct {
	typ       backends.Type
	fill, add string // fmt verbs: %[1]s is the key
	read      string
	unordered bool
}

var fillers = []filler{
	{backends.TypeHash, "HSET %[1]s a 1 b 2", "HSET %[1]s c 3", "HGETALL %[1]s", true},
	{backends.TypeSet, "SADD %[1]s a b", "SADD %[1]s c", "SMEMBERS %[1]s", true},
	{backends.TypeZSet, "ZADD %[1]s 1 a 2 b", "ZADD %[1]s 3 c", "ZRANGE %[1]s 0 -1 WITHSCORES", false},
	{backends.TypeList, "RPUSH %[1]s a b", "RPUSH %[1]s c", "LRANGE %[1]s 0 -1", false},
}

// fill makes k hold f's type with two members.
func (f filler) fillKey(t *testing.T, b backends.Backend, k string) {
	t.Helper()
	if got := exec(t, b, fmt.Sprintf(f.fill, k)); got != ":2\r\n" {
		t.Fatalf("%s = %q, want :2", fmt.Sprintf(f.fill, k), got)
	}
}

// contents reads k whole as f's type: its scalars, sorted when the type's
// order is not fixed.
func (f filler) contents(t *testing.T, b backends.Backend, k string) []string {
	t.Helper()
	got := exec(t, b, fmt.Sprintf(f.read, k))
	n, err := parseReply([]byte(got))
	if err != nil || n.isError() {
		t.Fatalf("%s = %q (%v)", fmt.Sprintf(f.read, k), got, err)
	}
	width := 1
	if f.typ == backends.TypeHash || f.typ == backends.TypeZSet {
		width = 2
	}
	c := n.chunks(width)
	if f.unordered {
		slices.Sort(c)
	}
	return c
}

// wantContents fails unless k holds want (as contents reads it).
func (f filler) wantContents(t *testing.T, b backends.Backend, k string, want []string) {
	t.Helper()
	if got := f.contents(t, b, k); !slices.Equal(got, want) {
		t.Fatalf("%s holds %q, want %q", k, got, want)
	}
}

// wantMadeAnew fails unless k, a key of f's type that is gone (deleted,
// expired, flushed, renamed away), reads empty, and the next write of it
// starts from nothing: its one member, and no lifetime.
func (f filler) wantMadeAnew(t *testing.T, b backends.Backend, k string) {
	t.Helper()
	f.wantContents(t, b, k, []string{})
	exec(t, b, fmt.Sprintf(f.add, k))
	f.wantContents(t, b, k, f.contentsOf("c"))
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL of a %s made anew = %v, want none", f.typ, d)
	}
}

// wantType fails unless TYPE k answers want.
func wantType(t *testing.T, b backends.Backend, k string, want backends.Type) {
	t.Helper()
	expect(t, b, "TYPE "+k, "+"+want.String())
}

func testCollStringCommands(t *testing.T, b backends.Backend) {
	str, missing := tagged(t, "str"), tagged(t, "missing")
	set(t, b, str, "v", backends.SetOptions{})
	for _, f := range fillers {
		k := tagged(t, f.typ.String())
		f.fillKey(t, b, k)
		want := f.contents(t, b, k)
		c := ctx(t)
		wrong := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, backends.ErrWrongType) {
				t.Fatalf("%s of a %s: %v, want ErrWrongType", what, f.typ, err)
			}
		}
		_, _, err := b.Get(c, k)
		wrong("GET", err)
		_, err = b.Set(c, k, []byte("x"), backends.SetOptions{Get: true})
		wrong("SET … GET", err)
		_, err = b.Set(c, k, []byte("x"), backends.SetOptions{Get: true, Cond: backends.SetIfPresent})
		wrong("SET XX GET", err)
		_, err = backends.DoIncrBy(c, b, k, 1)
		wrong("INCRBY", err)
		_, _, err = backends.DoGetDel(c, b, k)
		wrong("GETDEL", err)
		_, _, err = backends.DoGetEx(c, b, k, rel(time.Hour))
		wrong("GETEX EX", err)
		wrong("an update (APPEND)", b.Update(c, k, &appendUpdate{suffix: "x"}))
		if res := set(t, b, k, "x", backends.SetOptions{Cond: backends.SetIfAbsent}); res.Stored {
			t.Fatalf("SET NX over a %s stored", f.typ)
		}
		vals := mget(t, b, []string{k, str, missing, k}, nil)
		if len(vals) != 4 || vals[0] != nil || string(vals[1]) != "v" || vals[2] != nil || vals[3] != nil {
			t.Fatalf("MGET %s str missing %s = %q, want [nil v nil nil]", f.typ, f.typ, vals)
		}
		// None of them changed it, nor its lifetime.
		f.wantContents(t, b, k, want)
		wantType(t, b, k, f.typ)
		if d := ttl(t, b, k); d != backends.TTLPersistent {
			t.Fatalf("TTL of the %s = %v, want none", f.typ, d)
		}
	}
}

// testCollSetReplaces: SET over a collection replaces it, and a write of
// a collection there later starts from nothing (a store that keeps a
// collection's members apart from its key must have dropped them).
func testCollSetReplaces(t *testing.T, b backends.Backend) {
	c := ctx(t)
	for _, f := range fillers {
		ks := func(name string) string { return tagged(t, f.typ.String()+"-"+name) }
		fresh := func(k string) {
			t.Helper()
			exec(t, b, fmt.Sprintf(f.add, k))
			f.wantContents(t, b, k, f.contentsOf("c"))
		}

		k := ks("set")
		f.fillKey(t, b, k)
		_, err := b.Set(c, k, []byte("s"), backends.SetOptions{TTL: rel(time.Hour)})
		noErr(t, err)
		wantGet(t, b, k, "s", true)
		wantType(t, b, k, backends.TypeString)
		expect(t, b, fmt.Sprintf(f.add, k), "-"+backends.ErrWrongType.Error())
		del(t, b, k)
		fresh(k)
		if d := ttl(t, b, k); d != backends.TTLPersistent {
			t.Fatalf("TTL of a %s made after SET EX and DEL = %v, want none", f.typ, d)
		}

		k = ks("xx")
		f.fillKey(t, b, k)
		if res := set(t, b, k, "s", backends.SetOptions{Cond: backends.SetIfPresent}); !res.Stored {
			t.Fatalf("SET XX over a %s: not stored", f.typ)
		}
		wantGet(t, b, k, "s", true)

		k = ks("mset")
		f.fillKey(t, b, k)
		mset(t, b, backends.KV{Key: k, Val: []byte("m")})
		wantGet(t, b, k, "m", true)
		del(t, b, k)
		fresh(k)

		// SET with a deadline past deletes the key: the next write of a
		// collection starts from nothing.
		k = ks("past")
		f.fillKey(t, b, k)
		set(t, b, k, "s", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLAt, At: time.Now().Add(-time.Hour)}})
		if n := exists(t, b, k); n != 0 {
			t.Fatalf("EXISTS after SET PXAT past over a %s = %d", f.typ, n)
		}
		fresh(k)

		// A string that expires: the collection written after it has
		// no deadline.
		k = ks("expired")
		set(t, b, k, "s", backends.SetOptions{TTL: rel(50 * time.Millisecond)})
		eventually(t, "expiry", func() bool { return exists(t, b, k) == 0 })
		fresh(k)
		if d := ttl(t, b, k); d != backends.TTLPersistent {
			t.Fatalf("TTL of a %s written over an expired string = %v, want none", f.typ, d)
		}
	}
}

// contentsOf is what contents reads of a value holding only members (as
// fill and add make them: a 1, b 2, c 3).
func (f filler) contentsOf(members ...string) []string {
	score := map[string]string{"a": "1", "b": "2", "c": "3"}
	var out []string
	for _, m := range members {
		switch f.typ {
		case backends.TypeHash, backends.TypeZSet:
			out = append(out, m+"\x00"+score[m])
		default:
			out = append(out, m)
		}
	}
	return out
}

func testCollDelExists(t *testing.T, b backends.Backend) {
	var keys []string
	for _, f := range fillers {
		k := tagged(t, f.typ.String())
		f.fillKey(t, b, k)
		keys = append(keys, k)
	}
	missing := tagged(t, "missing")
	if n := exists(t, b, append(slices.Clone(keys), missing, keys[0])...); n != 5 {
		t.Fatalf("EXISTS of 4 collections, a missing key and one named twice = %d, want 5", n)
	}
	if n := del(t, b, keys[0], keys[1], missing); n != 2 {
		t.Fatalf("DEL of two collections and a missing key = %d, want 2", n)
	}
	if n := exists(t, b, keys[0], keys[1]); n != 0 {
		t.Fatalf("EXISTS after DEL = %d", n)
	}
	for i, f := range fillers[:2] {
		wantType(t, b, keys[i], backends.TypeNone)
		f.wantContents(t, b, keys[i], []string{})
		if d := ttl(t, b, keys[i]); d != backends.TTLMissing {
			t.Fatalf("TTL of a deleted %s = %v", f.typ, d)
		}
	}
	if n := del(t, b, keys...); n != 2 {
		t.Fatalf("DEL of all four = %d, want 2", n)
	}
	// A key emptied by a removal is gone too.
	for _, f := range fillers {
		k := tagged(t, f.typ.String()+"-emptied")
		f.fillKey(t, b, k)
		remove := map[backends.Type]string{
			backends.TypeHash: "HDEL %s a b", backends.TypeSet: "SREM %s a b",
			backends.TypeZSet: "ZREM %s a b", backends.TypeList: "LTRIM %s 1 0",
		}[f.typ]
		exec(t, b, fmt.Sprintf(remove, k))
		if n := exists(t, b, k); n != 0 {
			t.Fatalf("EXISTS of a %s emptied by %s = %d", f.typ, remove, n)
		}
		wantType(t, b, k, backends.TypeNone)
		if n := del(t, b, k); n != 0 {
			t.Fatalf("DEL of an emptied %s = %d", f.typ, n)
		}
	}
}

// testCollTTL: a collection's lifetime is the key's, as a string's:
// EXPIRE and its conditions, PERSIST, a write in place keeps it, a value
// that replaces the key (a *STORE's destination) or a key made again
// after it was emptied has none.
func testCollTTL(t *testing.T, b backends.Backend) {
	for _, f := range fillers {
		k := tagged(t, f.typ.String())
		f.fillKey(t, b, k)
		about := func(what string, want time.Duration) {
			t.Helper()
			if d := ttl(t, b, k); d <= want-10*time.Second || d > want {
				t.Fatalf("%s: TTL of the %s = %v, want about %v", what, f.typ, d, want)
			}
		}
		if d := ttl(t, b, k); d != backends.TTLPersistent {
			t.Fatalf("TTL of a new %s = %v", f.typ, d)
		}
		if !expire(t, b, k, rel(100*time.Second), backends.ExpireAlways) {
			t.Fatalf("EXPIRE of a %s = false", f.typ)
		}
		about("EXPIRE 100", 100*time.Second)
		exec(t, b, fmt.Sprintf(f.add, k))
		about("a write in place", 100*time.Second)
		f.wantContents(t, b, k, f.contentsOf("a", "b", "c"))
		if expire(t, b, k, rel(200*time.Second), backends.ExpireIfNone) {
			t.Fatalf("EXPIRE NX of a %s with a lifetime = true", f.typ)
		}
		if !expire(t, b, k, rel(200*time.Second), backends.ExpireIfGreater) {
			t.Fatalf("EXPIRE GT 200 of a %s = false", f.typ)
		}
		about("EXPIRE GT 200", 200*time.Second)
		if !expire(t, b, k, backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways) {
			t.Fatalf("PERSIST of a %s = false", f.typ)
		}
		if d := ttl(t, b, k); d != backends.TTLPersistent {
			t.Fatalf("TTL after PERSIST of a %s = %v", f.typ, d)
		}
		if et, ok := backends.As[backends.ExpireTimer](b); ok {
			at := time.UnixMilli(4102444800123)
			expire(t, b, k, backends.TTL{Mode: backends.TTLAt, At: at}, backends.ExpireAlways)
			ms, err := et.ExpireTime(ctx(t), k)
			noErr(t, err)
			if ms != at.UnixMilli() {
				t.Fatalf("PEXPIRETIME of a %s = %d, want %d", f.typ, ms, at.UnixMilli())
			}
		}
		f.wantContents(t, b, k, f.contentsOf("a", "b", "c"))
		if !expire(t, b, k, rel(0), backends.ExpireAlways) {
			t.Fatalf("EXPIRE 0 of a %s = false", f.typ)
		}
		if n := exists(t, b, k); n != 0 {
			t.Fatalf("EXISTS after EXPIRE 0 of a %s = %d", f.typ, n)
		}
		f.wantMadeAnew(t, b, k)
	}

	// Emptied and made again: no lifetime.
	s := tagged(t, "emptied")
	expect(t, b, "SADD "+s+" a", ":1")
	expire(t, b, s, rel(100*time.Second), backends.ExpireAlways)
	expect(t, b, "SREM "+s+" a", ":1")
	expect(t, b, "SADD "+s+" b", ":1")
	if d := ttl(t, b, s); d != backends.TTLPersistent {
		t.Fatalf("TTL of a set emptied and made again = %v, want none", d)
	}

	// A *STORE replaces its destination, lifetime included; its sources
	// keep theirs.
	src, dst := tagged(t, "src"), tagged(t, "dst")
	expect(t, b, "SADD "+src+" a b", ":2")
	expect(t, b, "HSET "+dst+" f v", ":1")
	expire(t, b, src, rel(100*time.Second), backends.ExpireAlways)
	expire(t, b, dst, rel(100*time.Second), backends.ExpireAlways)
	expect(t, b, "SUNIONSTORE "+dst+" "+src, ":2")
	if d := ttl(t, b, dst); d != backends.TTLPersistent {
		t.Fatalf("TTL of SUNIONSTORE's destination = %v, want none", d)
	}
	if d := ttl(t, b, src); d <= 90*time.Second {
		t.Fatalf("TTL of SUNIONSTORE's source = %v, want kept", d)
	}
	// A move keeps the lifetime of the destination it writes in place.
	expire(t, b, dst, rel(100*time.Second), backends.ExpireAlways)
	expect(t, b, "SMOVE "+src+" "+dst+" c", ":0")
	expect(t, b, "SADD "+src+" c", ":1")
	expect(t, b, "SMOVE "+src+" "+dst+" c", ":1")
	if d := ttl(t, b, dst); d <= 90*time.Second {
		t.Fatalf("TTL of SMOVE's destination = %v, want kept", d)
	}
}

// testCollExpiry: a collection whose lifetime ends is gone, to every
// command, and the next write of its key starts from nothing.
func testCollExpiry(t *testing.T, b backends.Backend) {
	var keys []string
	for _, f := range fillers {
		k := tagged(t, f.typ.String())
		f.fillKey(t, b, k)
		f.contents(t, b, k) // a cache in front holds it now
		expire(t, b, k, rel(time.Second), backends.ExpireAlways)
		keys = append(keys, k)
	}
	for i, f := range fillers {
		k := keys[i]
		eventuallyWithin(t, 10*time.Second, "the "+f.typ.String()+"'s expiry", func() bool { return exists(t, b, k) == 0 })
		wantType(t, b, k, backends.TypeNone)
		if d := ttl(t, b, k); d != backends.TTLMissing {
			t.Fatalf("TTL of an expired %s = %v", f.typ, d)
		}
		f.wantMadeAnew(t, b, k)
	}
	// A deadline already past deletes the key at once.
	k := tagged(t, "past")
	expect(t, b, "HSET "+k+" f v", ":1")
	if !expire(t, b, k, backends.TTL{Mode: backends.TTLAt, At: time.Now().Add(-time.Second)}, backends.ExpireAlways) {
		t.Fatal("EXPIREAT in the past of a hash = false")
	}
	expect(t, b, "HGET "+k+" f", "$-1")
}

// eventuallyWithin is eventually with a bound of its own.
func eventuallyWithin(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s did not happen within %v", what, bound)
}

// testCollEmptyKey: the empty key holds a collection as any other. (Other
// subtests may share the store: this one deletes it first and last.)
func testCollEmptyKey(t *testing.T, b backends.Backend) {
	del(t, b, "")
	t.Cleanup(func() { b.Del(context.Background(), []string{""}) })
	expect(t, b, "HSET '' f v", ":1")
	expect(t, b, "HGET '' f", "$1 v")
	expect(t, b, "TYPE ''", "+hash")
	expect(t, b, "EXISTS ''", ":1")
	expect(t, b, "DEL ''", ":1")
	expect(t, b, "RPUSH '' a", ":1")
	expect(t, b, "LPOP ''", "$1 a")
	expect(t, b, "EXISTS ''", ":0")
}

// testCollEmptied: a command that empties a collection, which the store
// then deletes, marks that key (backends.MarkEmptied), and only that one:
// not a key it found absent, nor one it left with members.
func testCollEmptied(t *testing.T, b backends.Backend, o *options) {
	k := func(name string) string { return tagged(t, name) }
	checkMarks(t, b, o, "emptied", (*backends.Passed).Emptied, []markCase{
		{[]string{"SADD %s a b"}, []string{"SREM", k("s"), "a", "b"}, []bool{true}},
		{nil, []string{"SREM", k("s"), "a"}, []bool{false}},
		{[]string{"SADD %s a b"}, []string{"SREM", k("s"), "a"}, []bool{false}},
		{[]string{"RPUSH %s x"}, []string{"LPOP", k("l")}, []bool{true}},
		{nil, []string{"LPOP", k("l")}, []bool{false}},
		{[]string{"HSET %s f v"}, []string{"HDEL", k("h"), "f"}, []bool{true}},
		{[]string{"ZADD %s 1 m"}, []string{"ZPOPMIN", k("z")}, []bool{true}},
		{[]string{"ZADD %s 1 m 2 n"}, []string{"ZREMRANGEBYSCORE", k("z"), "0", "5"}, []bool{true}},
		{[]string{"RPUSH %s x y"}, []string{"LTRIM", k("l"), "1", "0"}, []bool{true}},
		{nil, []string{"LTRIM", k("l"), "1", "0"}, []bool{false}},
		{[]string{"RPUSH %s x"}, []string{"LMOVE", k("l"), k("d"), "LEFT", "LEFT"}, []bool{true, false}},
		{[]string{"SADD %s m"}, []string{"SPOP", k("s")}, []bool{true}},
		{[]string{"SADD %s m"}, []string{"SINTERSTORE", k("s"), k("missing")}, []bool{true, false}},
	})
}

// markCase is a request run on keys set up first, and what a store must
// say of each of its keys after it (emptied, created).
type markCase struct {
	setup []string // requests on the first key (%s), run first
	cmd   []string
	want  []bool // by key, in the command's order
}

// checkMarks runs each case on b and checks what mark says of its keys;
// a store that passes the command on says nothing of any.
func checkMarks(t *testing.T, b backends.Backend, o *options, what string, mark func(*backends.Passed, int) bool, cases []markCase) {
	t.Helper()
	for _, tc := range cases {
		cmd := slices.Clone(tc.cmd)
		keys := []string{cmd[1]}
		if len(tc.want) == 2 {
			keys = append(keys, cmd[2])
		}
		del(t, b, keys...)
		for _, s := range tc.setup {
			exec(t, b, fmt.Sprintf(s, keys[0]))
		}
		op := command(t, cmd...)
		noErr(t, b.Do(ctx(t), keys, op))
		p := op.(backends.Passable).Request()
		for i, want := range tc.want {
			if o.passes {
				want = false // a store that passes the command on does not say
			}
			if got := mark(p, i); got != want {
				t.Errorf("%q after %q: keys[%d] %s %v, want %v", cmd, tc.setup, i, what, got, want)
			}
		}
		del(t, b, keys...)
	}
}
