package valkey

import (
	"context"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// An atomic run's load and write-back (atomic.go), for keys of every type.
//
// The load is WATCH, then TYPE, GET and PTTL of each key in one round
// trip; when some keys hold collections, a second round trip reads them
// whole (HGETALL, SMEMBERS, ZRANGE 0 -1 WITHSCORES, LRANGE 0 -1). The
// reads are pipelined, not atomic: a key may change between its TYPE and
// its read. Every read comes after the WATCH, so such a change makes the
// attempt's EXEC fail; the load calls itself torn when what it read does
// not fit together (TYPE said hash and HGETALL said WRONGTYPE, or nothing;
// TYPE said string and GET nil), fn is not run on it, and the attempt
// ends with an empty EXEC and starts over.
//
// The write-back, inside the MULTI/EXEC, writes of a collection the run
// changed in place only the members it touched (the Write's Journal):
// HSET/SADD/ZADD of those it left, then HDEL/SREM/ZREM of those it
// removed (adds first: the key never empties on the way, which would drop
// its lifetime). A collection the run made (or replaced), a list, or one
// whose Journal says All is written whole: DEL, then HSET/SADD/ZADD/RPUSH
// of every member, then its lifetime.

// collRead is the command that reads a collection of type t whole.
func collRead(dc valkey.DedicatedClient, t backends.Type, k string) valkey.Completed {
	switch t {
	case backends.TypeHash:
		return dc.B().Hgetall().Key(k).Build()
	case backends.TypeSet:
		return dc.B().Smembers().Key(k).Build()
	case backends.TypeZSet:
		return dc.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()
	}
	return dc.B().Lrange().Key(k).Start(0).Stop(-1).Build()
}

// load reads keys (as the server names them) under a WATCH; see above.
// torn reports a load that does not fit together: the keys changed
// meanwhile and the EXEC will fail.
func (s *Store) load(ctx context.Context, dc valkey.DedicatedClient, ks []string) (state []backends.Expiring, torn bool, err error) {
	cmds := make(valkey.Commands, 0, 1+3*len(ks))
	cmds = append(cmds, dc.B().Watch().Key(ks...).Build())
	for _, k := range ks {
		cmds = append(cmds, dc.B().Type().Key(k).Build(), dc.B().Get().Key(k).Build(), dc.B().Pttl().Key(k).Build())
	}
	reads := dc.DoMulti(s.d.deadlines.Of(ctx), cmds...)
	if err := reads[0].Error(); err != nil {
		return nil, false, err
	}
	state = make([]backends.Expiring, len(ks))
	var colls []int // the keys that hold a collection
	for i := range ks {
		r := reads[1+3*i : 4+3*i]
		name, err := r[0].ToString()
		if err != nil {
			return nil, false, err
		}
		if err := firstNonValkeyError(r[1:]); err != nil {
			return nil, false, err
		}
		ms, err := r[2].AsInt64()
		if err != nil {
			return nil, false, err
		}
		ttl := backends.TTLPersistent
		if ms >= 0 {
			ttl = time.Duration(ms) * time.Millisecond
		}
		if name == "none" {
			torn = torn || !valkey.IsValkeyNil(r[1].Error())
			continue
		}
		torn = torn || ms == -2 // gone since TYPE
		t, ok := backends.ParseType(name)
		switch {
		case !ok:
			// A stream, a module's type: the run cannot hold it, and
			// would take it for absent.
			return nil, false, backends.ErrWrongType
		case t == backends.TypeString:
			v, err := r[1].ToString()
			if err != nil { // nil, or WRONGTYPE: changed since TYPE
				torn = true
				continue
			}
			state[i] = backends.Expiring{Val: []byte(v), TTL: ttl}
		default:
			v, err := newColl(t)
			if err != nil {
				return nil, false, err
			}
			state[i] = backends.Expiring{Type: t, TTL: ttl, Coll: v}
			colls = append(colls, i)
		}
	}
	if torn || len(colls) == 0 {
		return state, torn, nil
	}
	cmds = cmds[:0]
	for _, i := range colls {
		cmds = append(cmds, collRead(dc, state[i].Type, ks[i]))
	}
	reads = dc.DoMulti(s.d.deadlines.Of(ctx), cmds...)
	for j, i := range colls {
		ok, err := fill(state[i].Coll, reads[j])
		if err != nil {
			return nil, false, err
		}
		torn = torn || !ok
	}
	return state, torn, nil
}

// newColl is coll.New, or ErrWrongType for a type package coll does not
// hold (a stream): the run cannot load the key.
func newColl(t backends.Type) (backends.Value, error) {
	switch t {
	case backends.TypeHash, backends.TypeSet, backends.TypeZSet, backends.TypeList:
		return coll.New(t), nil
	}
	return nil, backends.ErrWrongType
}

// fill adds to v, empty, the members of the reply that read it whole; ok
// is false when the reply says the key changed since its TYPE (WRONGTYPE,
// or no members: a collection is never empty).
func fill(v backends.Value, res valkey.ValkeyResult) (ok bool, err error) {
	if err := res.NonValkeyError(); err != nil {
		return false, err
	}
	if res.Error() != nil {
		return false, nil
	}
	switch t := v.Type(); t {
	case backends.TypeHash:
		fv, err := res.AsStrMap()
		if err != nil {
			return false, err
		}
		for f, val := range fv {
			coll.Add(v, coll.Member{Member: owned(f), Value: owned(val)})
		}
	case backends.TypeZSet:
		zs, err := res.AsZScores()
		if err != nil {
			return false, err
		}
		for _, z := range zs {
			coll.Add(v, coll.Member{Member: owned(z.Member), Score: z.Score})
		}
	default: // sets' members, lists' elements in order
		ms, err := res.AsStrSlice()
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if t == backends.TypeList {
				coll.Add(v, coll.Member{Value: owned(m)})
			} else {
				coll.Add(v, coll.Member{Member: owned(m)})
			}
		}
	}
	return v.Len() > 0, nil
}

// owned is a string of a reply as bytes, without a copy: valkey-go read
// it into a buffer of its own that nothing else refers to (see bytesOf),
// and a collection never changes the bytes it keeps.
func owned(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func firstNonValkeyError(rs []valkey.ValkeyResult) error {
	for _, r := range rs {
		if err := r.NonValkeyError(); err != nil {
			return err
		}
	}
	return nil
}

// writeArgs bounds the arguments of one command of a write-back: a large
// collection is written by several commands (inside one MULTI/EXEC).
const writeArgs = 1024

// collWrites appends the commands that make key k hold w.Coll, elapsed
// after the load instant; see above.
func collWrites(cmds valkey.Commands, dc valkey.DedicatedClient, k string, w snapshot.Write, elapsed time.Duration) valkey.Commands {
	rem := w.TTL - elapsed
	expiring := w.TTL != backends.TTLPersistent
	if expiring && rem <= 0 {
		return append(cmds, dc.B().Del().Key(k).Build()) // its deadline passed during the run
	}
	lifetime := func() valkey.Completed {
		if !expiring {
			return dc.B().Persist().Key(k).Build()
		}
		return dc.B().Pexpire().Key(k).Milliseconds(ceilMillis(rem)).Build()
	}
	if w.TTLOnly {
		return append(cmds, lifetime())
	}
	t := w.Coll.Type()
	if w.Journal == nil || w.Journal.All || t == backends.TypeList {
		if w.Existed {
			cmds = append(cmds, dc.B().Del().Key(k).Build())
		}
		var args []string
		coll.Each(w.Coll, func(m coll.Member) bool {
			args = appendMember(args, t, m)
			return true
		})
		cmds = appendBatched(cmds, dc, addCommand[t], k, args, argsPerMember(t))
		if expiring {
			cmds = append(cmds, lifetime())
		}
		return cmds
	}
	var put, gone []string
	for name := range w.Journal.Members {
		if m, ok := coll.Lookup(w.Coll, name); ok {
			put = appendMember(put, t, m)
		} else {
			gone = append(gone, name)
		}
	}
	cmds = appendBatched(cmds, dc, addCommand[t], k, put, argsPerMember(t))
	cmds = appendBatched(cmds, dc, removeCommand[t], k, gone, 1)
	if !w.TTLKept {
		cmds = append(cmds, lifetime())
	}
	return cmds
}

// The commands that add members to a collection, and remove them, by type.
var (
	addCommand = map[backends.Type]string{
		backends.TypeHash: "HSET", backends.TypeSet: "SADD", backends.TypeZSet: "ZADD", backends.TypeList: "RPUSH",
	}
	removeCommand = map[backends.Type]string{
		backends.TypeHash: "HDEL", backends.TypeSet: "SREM", backends.TypeZSet: "ZREM",
	}
)

// appendMember appends m's arguments to the add command of type t: a
// hash's field and value, a sorted set's score and member, a set's
// member, a list's element.
func appendMember(args []string, t backends.Type, m coll.Member) []string {
	switch t {
	case backends.TypeHash:
		return append(args, string(m.Member), string(m.Value))
	case backends.TypeZSet:
		return append(args, scoreArg(m.Score), string(m.Member))
	case backends.TypeList:
		return append(args, string(m.Value))
	}
	return append(args, string(m.Member))
}

// argsPerMember is how many arguments appendMember gives a member.
func argsPerMember(t backends.Type) int {
	if t == backends.TypeHash || t == backends.TypeZSet {
		return 2
	}
	return 1
}

// scoreArg is a score as ZADD reads it back exactly: the shortest decimal
// that parses to it, and inf, -inf as Redis writes them.
func scoreArg(f float64) string {
	if math.IsInf(f, 0) {
		return coll.FormatScore(f)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// appendBatched appends "name k args…", split into commands of at most
// writeArgs arguments, each member's per arguments together.
func appendBatched(cmds valkey.Commands, dc valkey.DedicatedClient, name, k string, args []string, per int) valkey.Commands {
	step := writeArgs - writeArgs%per
	for len(args) > 0 {
		n := min(step, len(args))
		cmds = append(cmds, dc.B().Arbitrary(name).Keys(k).Args(args[:n]...).Build())
		args = args[n:]
	}
	return cmds
}
