package coll

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// A read-only Op changes nothing (stores run them side by side under a
// read lock), and its Reply, written after the run, answers what the value
// held at the run even when a write came between (the store's lock is
// released before the reply is written).
func TestReadOnlyOpsKeepTheirResult(t *testing.T) {
	reads := []string{
		"HGET h f1", "HMGET h f1 f2 nope", "HGETALL h", "HKEYS h", "HVALS h", "HLEN h", "HSTRLEN h f3",
		"HEXISTS h f1", "HSCAN h 0", "HSCAN h 0 COUNT 5", "HRANDFIELD h 5 WITHVALUES", "HRANDFIELD h -3",
		"SMEMBERS s", "SISMEMBER s m1", "SMISMEMBER s m1 m2", "SCARD s", "SSCAN s 0", "SSCAN s 0 COUNT 7",
		"SRANDMEMBER s 1000", "SRANDMEMBER s -3000", "SINTER s t", "SUNION s t", "SDIFF s t", "SINTERCARD 2 s t",
		"SMEMBERS i", "SSCAN i 0",
	}
	for _, big := range []bool{false, true} {
		n := 20
		if big {
			n = 700 // hash tables to Redis
		}
		d := newDB()
		d.do(3, Args(fill("HSET h", "f", n, true)))
		d.do(3, Args(fill("SADD s", "m", n, false)))
		d.do(3, Args(fill("SADD t", "m", n/2, false)))
		d.do(3, Args(ints("SADD i", 0, n/2)))
		for _, line := range reads {
			args := Args(line)
			op, err := parsers[strings.ToLower(string(args[0]))](args)
			if err != nil {
				t.Fatal(err)
			}
			if op.Writes() != backends.ReadOnly {
				t.Fatalf("%s writes", line)
			}
			keys := make([]string, len(op.Request().KeyAt))
			for i, at := range op.Request().KeyAt {
				keys[i] = string(args[at])
			}
			sl := NewSlots(keys, &DefaultLimits)
			before := map[string]backends.Value{}
			for i, k := range keys {
				sl.Load(sl.Slot(i), d.vals[k], false)
				before[k] = d.vals[k].Clone()
			}
			if err := op.Run(sl); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			w1 := &RESPBuffer{Proto: 3}
			op.Reply(w1)
			for k, v := range before {
				if !sameValue(v, d.vals[k]) {
					t.Fatalf("%s changed %s", line, k)
				}
			}
			// A write between the run and the reply.
			for _, k := range keys {
				switch v := d.vals[k].(type) {
				case *Hash:
					v.Set("f1", []byte("changed"))
					v.Del("f2", nil)
					v.Set("new", []byte("v"))
				case *Set:
					v.Rem(v.At(0))
					v.Add("new")
				}
			}
			w2 := &RESPBuffer{Proto: 3}
			op.Reply(w2)
			if !strings.Contains(line, "RAND") && !bytes.Equal(w1.Bytes(), w2.Bytes()) {
				t.Fatalf("%s: the reply changed with the value:\n%q\n%q", line, short(w1.String()), short(w2.String()))
			}
			for k, v := range before {
				d.vals[k] = v // undo
			}
		}
	}
}

// sameValue reports whether two hashes or sets hold the same, in the same
// order.
func sameValue(a, b backends.Value) bool {
	switch a := a.(type) {
	case *Hash:
		b := b.(*Hash)
		return slices.Equal(a.fields, b.fields) && slices.EqualFunc(a.vals, b.vals, bytes.Equal)
	case *Set:
		return slices.Equal(a.members, b.(*Set).members)
	}
	return false
}

// An Op run twice (a store that retries runs it again on the values as
// they were) answers what one run answers: each run overwrites its
// results.
func TestRunTwice(t *testing.T) {
	setup := []string{
		"HSET h a 1 b 2 c x", "SADD s 1 2 3 x", "SADD t 2 3 4", "SET str v",
	}
	for _, line := range []string{
		"HSET h a 5 d 6", "HSETNX h z 1", "HGET h a", "HMGET h a b q", "HDEL h a q", "HEXISTS h b", "HLEN h",
		"HSTRLEN h c", "HGETALL h", "HKEYS h", "HINCRBY h b 5", "HINCRBY h c 1", "HINCRBYFLOAT h b 1.5",
		"HSCAN h 0", "SADD s 9 1", "SREM s 1 q", "SMEMBERS s", "SMISMEMBER s 1 q", "SCARD s", "SMOVE s t x",
		"SINTER s t", "SINTERSTORE s s t", "SINTERCARD 2 s t", "SUNIONSTORE d s t", "SDIFF s t", "SDIFFSTORE t t s",
		"SSCAN s 0", "SPOP s 4", "SRANDMEMBER s 10", "HGETALL str", "SINTER s str",
	} {
		once := newDB()
		twice := newDB()
		for _, l := range setup {
			once.do(3, Args(l))
			twice.do(3, Args(l))
		}
		want := once.do(3, Args(line))
		args := Args(line)
		op, err := parsers[strings.ToLower(string(args[0]))](args)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, len(op.Request().KeyAt))
		for i, at := range op.Request().KeyAt {
			keys[i] = string(args[at])
		}
		var got []byte
		for range 2 {
			sl := NewSlots(keys, &DefaultLimits)
			for i, k := range keys {
				var v backends.Value
				if twice.vals[k] != nil {
					v = twice.vals[k].Clone()
				}
				_, str := twice.strs[k]
				sl.Load(sl.Slot(i), v, str)
			}
			w := &RESPBuffer{Proto: 3}
			if err := op.Run(sl); err != nil {
				w.Write(errorReply(err))
			} else {
				op.Reply(w)
			}
			got = w.Bytes()
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s run twice:\n got %q\nwant %q", line, got, want)
		}
	}
}

// Read-only Ops run side by side on one value (under a store's read lock)
// without a race: the intset's cached order is the one thing they store.
func TestReadOnlyOpsSideBySide(t *testing.T) {
	s := NewSet()
	for i := range 300 {
		s.Add(strconv.Itoa(i * 7 % 301))
	}
	h := bigHash(50)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				line := []string{"SMEMBERS k", "SSCAN k 0", "SRANDMEMBER k 400", "HGETALL h", "HRANDFIELD h 3", "HSCAN h 0"}[(g+i)%6]
				args := Args(line)
				op, _ := parsers[strings.ToLower(string(args[0]))](args)
				sl := NewSlots([]string{string(args[1])}, &DefaultLimits)
				if args[1][0] == 'k' {
					sl.Load(0, s, false)
				} else {
					sl.Load(0, h, false)
				}
				if err := op.Run(sl); err != nil {
					t.Error(err)
					return
				}
				op.Reply(&RESPBuffer{Proto: 2})
			}
		}()
	}
	for range 4 {
		<-done
	}
}
