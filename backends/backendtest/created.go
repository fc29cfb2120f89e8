package backendtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Keys a write made, for Redis's "new" keyspace event: a write that makes a
// key that did not exist (or had expired) says so, and one over a live key
// does not. Strings say it in SetResult.Created, KV.Created and an update's
// Created when asked; commands on collections mark it
// (backends.MarkCreated).

// testCreated: the string writes.
func testCreated(t *testing.T, b backends.Backend, o *options) {
	ask := backends.SetOptions{AskCreated: true}
	// said checks what a write said; own is true for a write the store may
	// pass to a server that has it, which does not say (PassesCommands).
	said := func(what string, got, want, own bool) {
		t.Helper()
		if own && o.passes {
			want = false
		}
		if got != want {
			t.Errorf("%s: created %v, want %v", what, got, want)
		}
	}
	k := key(t, "k")
	said("SET of an absent key", set(t, b, k, "1", ask).Created, true, true)
	said("SET over it", set(t, b, k, "2", ask).Created, false, true)
	said("SET … KEEPTTL over it", set(t, b, k, "3", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}, AskCreated: true}).Created, false, true)
	said("SET not asked", set(t, b, key(t, "unasked"), "1", backends.SetOptions{}).Created, false, true)
	said("SET EX of an absent key", set(t, b, key(t, "ex"), "1", backends.SetOptions{TTL: rel(time.Hour), AskCreated: true}).Created, true, true)
	said("SET … KEEPTTL of an absent key", set(t, b, key(t, "keep"), "1", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}, AskCreated: true}).Created, true, true)

	nx := backends.SetOptions{Cond: backends.SetIfAbsent, AskCreated: true}
	said("SET NX of an absent key", set(t, b, key(t, "nx"), "1", nx).Created, true, true)
	said("SET NX refused", set(t, b, key(t, "nx"), "2", nx).Created, false, true)
	said("SET XX over a live key", set(t, b, k, "4", backends.SetOptions{Cond: backends.SetIfPresent, AskCreated: true}).Created, false, true)
	get := backends.SetOptions{Get: true, AskCreated: true}
	said("SET … GET of an absent key", set(t, b, key(t, "get"), "1", get).Created, true, true)
	said("SET … GET over it", set(t, b, key(t, "get"), "2", get).Created, false, true)

	// An expired key is made anew, by SET and by INCRBY.
	e, ei := key(t, "expired"), key(t, "expired-incr")
	set(t, b, e, "old", backends.SetOptions{TTL: rel(50 * time.Millisecond)})
	set(t, b, ei, "7", backends.SetOptions{TTL: rel(50 * time.Millisecond)})
	eventually(t, "expiry", func() bool {
		n, err := b.Exists(ctx(t), []string{e, ei})
		return err == nil && n == 0
	})
	said("SET over an expired key", set(t, b, e, "new", ask).Created, true, true)
	u := backends.IncrBy{Delta: 1}
	noErr(t, b.Update(ctx(t), ei, &u))
	said("INCRBY over an expired key", u.Created, true, true)
	wantGet(t, b, ei, "1", true)

	// MSET: of a key named twice, its first pair made it.
	m1, m2 := key(t, "m1"), key(t, "m2")
	set(t, b, m2, "x", backends.SetOptions{})
	pairs := []backends.KV{
		{Key: m1, Val: []byte("1"), AskCreated: true},
		{Key: m2, Val: []byte("2"), AskCreated: true},
		{Key: m1, Val: []byte("3"), AskCreated: true},
		{Key: key(t, "m3"), Val: []byte("4")},
	}
	mset(t, b, pairs...)
	for i, want := range []bool{true, false, false, false} {
		said(fmt.Sprintf("MSET pair %d", i), pairs[i].Created, want, true)
	}
	wantGet(t, b, m1, "3", true)

	// The updates that may make their key: INCRBY (natively, on some
	// stores) and the ones every store runs through Apply.
	for _, tc := range []struct {
		name string
		own  bool
		make func() (backends.Update, *bool)
	}{
		{"INCRBY", true, func() (backends.Update, *bool) { u := &backends.IncrBy{Delta: 2}; return u, &u.Created }},
		{"APPEND", false, func() (backends.Update, *bool) { u := &backends.Append{Suffix: []byte("a")}; return u, &u.Created }},
		{"SETRANGE", false, func() (backends.Update, *bool) {
			u := &backends.SetRange{Offset: 2, Val: []byte("a")}
			return u, &u.Created
		}},
		{"SETBIT", false, func() (backends.Update, *bool) { u := &backends.SetBit{Offset: 9, Bit: 1}; return u, &u.Created }},
		{"INCRBYFLOAT", false, func() (backends.Update, *bool) {
			u := &backends.IncrByFloat{Delta: 1.5}
			return u, &u.Created
		}},
	} {
		k := key(t, tc.name)
		for i, want := range []bool{true, false} {
			u, created := tc.make()
			noErr(t, b.Update(ctx(t), k, u))
			said(fmt.Sprintf("%s #%d", tc.name, i+1), *created, want, tc.own)
		}
	}
	u2 := &backends.SetRange{Offset: 3}
	noErr(t, b.Update(ctx(t), key(t, "setrange-nothing"), u2))
	said("SETRANGE of nothing", u2.Created, false, false)
}

// testCollCreated: a command on collections that makes a key marks it, and
// only it: not a key it found, nor one it made and left empty.
func testCollCreated(t *testing.T, b backends.Backend, o *options) {
	c := ctx(t)
	k := func(name string) string { return tagged(t, name) }
	checkMarks(t, b, o, "created", (*backends.Passed).Created, []markCase{
		{nil, []string{"HSET", k("h"), "f", "v"}, []bool{true}},
		{[]string{"HSET %s f v"}, []string{"HSET", k("h"), "g", "w"}, []bool{false}},
		{nil, []string{"HINCRBY", k("h"), "f", "1"}, []bool{true}},
		{nil, []string{"SADD", k("s"), "a"}, []bool{true}},
		{[]string{"SADD %s a"}, []string{"SADD", k("s"), "a"}, []bool{false}},
		{nil, []string{"SREM", k("s"), "a"}, []bool{false}},
		{nil, []string{"RPUSH", k("l"), "x"}, []bool{true}},
		{nil, []string{"LPUSHX", k("l"), "x"}, []bool{false}},
		{nil, []string{"ZADD", k("z"), "1", "m"}, []bool{true}},
		{nil, []string{"ZADD", k("z"), "XX", "1", "m"}, []bool{false}},
		{[]string{"ZADD %s 1 m"}, []string{"ZINCRBY", k("z"), "1", "m"}, []bool{false}},
		{[]string{"RPUSH %s x"}, []string{"LMOVE", k("l"), k("d"), "LEFT", "LEFT"}, []bool{false, true}},
		{nil, []string{"LMOVE", k("l"), k("d"), "LEFT", "LEFT"}, []bool{false, false}},
		{[]string{"SADD %s m"}, []string{"SMOVE", k("s"), k("d"), "m"}, []bool{false, true}},
		{nil, []string{"SINTERSTORE", k("d"), k("missing")}, []bool{false, false}},
	})

	// *STORE into a key that does not exist makes it; into one that does,
	// it replaces it.
	src, dst := k("src"), k("dst")
	del(t, b, src, dst)
	exec(t, b, "SADD "+src+" a b")
	for i, want := range []bool{true, false} {
		op := command(t, "SUNIONSTORE", dst, src)
		noErr(t, b.Do(c, []string{dst, src}, op))
		if o.passes {
			want = false
		}
		if got := op.(backends.Passable).Request().Created(0); got != want {
			t.Errorf("SUNIONSTORE #%d: created %v, want %v", i+1, got, want)
		}
	}
	del(t, b, src, dst)
}
