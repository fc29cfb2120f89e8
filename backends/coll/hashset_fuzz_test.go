package coll

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// FuzzHashSetCommands: any request of the right arity parses or is
// refused, and one that parses names keys inside the request and runs on
// a hash, a set, a string or nothing without a panic, leaving a value
// whose bookkeeping holds.
func FuzzHashSetCommands(f *testing.F) {
	for _, s := range []string{
		"hset k a 1 b 2", "hincrbyfloat k a 1.5", "hrandfield k -5 withvalues", "hscan k 0 match * count 2",
		"sadd k 1 2 x", "spop k 2", "srandmember k -3", "sintercard 2 k j limit 1", "sdiffstore k j k",
		"smove k j 1", "sscan k 18446744073709551615 count 1",
	} {
		f.Add(s, uint8(0))
	}
	names := commandNames(func(c Spec) bool { return c.Name[0] == 'h' || c.Name[0] == 's' })
	f.Fuzz(func(t *testing.T, line string, holds uint8) {
		args := bytes.Split([]byte(line), []byte(" "))
		name := strings.ToLower(string(args[0]))
		arity, ok := arityOf(name)
		if !ok {
			name = names[int(holds)%len(names)]
			arity, _ = arityOf(name)
			args = append([][]byte{[]byte(name)}, args...)
		}
		if arity > 0 && len(args) != arity || arity < 0 && len(args) < -arity {
			return
		}
		op, err := parsers[name](args)
		if err != nil {
			var r backends.Refusal
			if !errors.As(err, &r) || !strings.HasPrefix(string(r), "ERR ") {
				t.Fatalf("%q: %v is no refusal", line, err)
			}
			return
		}
		req := op.Request()
		keys := make([]string, len(req.KeyAt))
		for i, at := range req.KeyAt {
			if at <= 0 || at >= len(args) {
				t.Fatalf("%q: key at %d", line, at)
			}
			keys[i] = string(args[at])
		}
		s := NewSlots(keys, &DefaultLimits)
		for i := range s.Len() {
			switch (int(holds) + i) % 4 {
			case 0:
				h := NewHash()
				h.Set("a", []byte("1"))
				h.Set("b", []byte("x"))
				s.Load(i, h, false)
			case 1:
				set := NewSet()
				set.Add("1")
				set.Add("x")
				s.Load(i, set, false)
			case 2:
				s.Load(i, nil, true)
			}
		}
		if err := op.Run(s); err != nil {
			return
		}
		op.Reply(&RESPBuffer{Proto: 3})
		for i := range s.Len() {
			switch v, _ := s.Value(i); v := v.(type) {
			case *Hash:
				if len(v.idx) != v.Len() || len(v.vals) != v.Len() {
					t.Fatalf("%q: a hash of %d fields, %d in its map", line, v.Len(), len(v.idx))
				}
			case *Set:
				if len(v.idx) != v.Len() {
					t.Fatalf("%q: a set of %d members, %d in its map", line, v.Len(), len(v.idx))
				}
			}
		}
	})
}
