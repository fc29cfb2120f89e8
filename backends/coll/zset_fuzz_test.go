package coll

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Fuzz tests of the sorted set parsers: no request, however odd, panics a
// parser, a run or a reply; and scores are read as strtod reads them.

func FuzzZSetCommands(f *testing.F) {
	for _, seed := range []string{
		"zadd z nx ch 1 a 2 b", "zrange z (1 +inf byscore rev limit 0 2 withscores", "zrangestore d z [a + bylex",
		"zunionstore d 2 z s weights 1 2 aggregate min", "zintercard 2 z s limit 1", "zscan z 3 match a* count 2",
		"zrandmember z -5 withscores", "bzmpop 0.1 2 z s max count 3", "zmpop 1 z min", "zremrangebylex z - (b",
		"zpopmax z 3", "zincrby z -inf a", "zadd z incr 1 a", "zdiff 2 z z withscores",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := [][]byte{}
		for _, w := range strings.Split(line, " ") {
			args = append(args, []byte(w))
		}
		name := strings.ToLower(string(args[0]))
		arity, ok := arityOf(name)
		if !ok || !(name[0] == 'z' || strings.HasPrefix(name, "bz")) {
			return
		}
		if (arity > 0 && len(args) != arity) || (arity < 0 && len(args) < -arity) {
			return
		}
		op, err := parsers[name](args)
		if err != nil {
			return
		}
		keys := make([]string, len(op.Request().KeyAt))
		for i, at := range op.Request().KeyAt {
			keys[i] = string(args[at])
		}
		s := NewSlots(keys, &DefaultLimits)
		for i, k := range keys {
			switch k {
			case "z":
				z := NewZSet()
				for j, m := range []string{"a", "b", "c", "d", "e"} {
					z.Add(m, float64(j))
				}
				s.Load(s.Slot(i), z, false)
			case "s":
				s.Load(s.Slot(i), &testSet{members: []string{"a", "x"}, idx: map[string]bool{"a": true, "x": true}}, false)
			case "str":
				s.Load(s.Slot(i), nil, true)
			}
		}
		if op.Run(s) != nil {
			return
		}
		op.Reply(&RESPBuffer{Proto: 2})
		op.Reply(&RESPBuffer{Proto: 3})
		for i := range s.Len() {
			if z, _ := s.Value(i); z != nil {
				if z, ok := z.(*ZSet); ok {
					z.check(t, zsetModel(z))
				}
			}
		}
	})
}

// zsetModel is what z holds, read through its map only.
func zsetModel(z *ZSet) map[string]float64 {
	m := map[string]float64{}
	for k, x := range z.nodes {
		m[k] = x.score
	}
	return m
}

// Scores: what strconv reads of a plain decimal, strtod reads the same.
func FuzzParseScore(f *testing.F) {
	for _, seed := range []string{"1", "-1.5", "1e10", ".5", "5.", "+3", "1e400", "1e-400", "0x1p3", "inf", "-Infinity", "nan", " 1", "1 ", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseScore([]byte(s))
		if ok && math.IsNaN(got) {
			t.Fatalf("parseScore(%q) is NaN", s)
		}
		if _, _, ok := parseScoreBound([]byte(s)); !ok && s == "" {
			t.Fatal("the empty bound is 0")
		}
		plain := s != "" && strings.Trim(s, "0123456789.eE+-") == "" && !strings.ContainsAny(s[1:], "+-") ||
			strings.ContainsAny(s, "eE") && strings.Trim(s, "0123456789.eE+-") == ""
		if !plain {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		underflow := err == nil && want == 0 && strings.Trim(strings.SplitN(strings.ToLower(s), "e", 2)[0], "+-.0") != ""
		switch {
		case err == nil && !underflow && !ok:
			t.Fatalf("parseScore(%q) refused what strconv reads as %v", s, want)
		case err == nil && !underflow && got != want:
			t.Fatalf("parseScore(%q) = %v, strconv %v", s, got, want)
		case (err != nil || underflow) && ok:
			t.Fatalf("parseScore(%q) = %v, strconv refuses it (%v, underflow %v)", s, got, err, underflow)
		}
	})
}
