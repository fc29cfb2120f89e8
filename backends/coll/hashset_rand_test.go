package coll

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// Statistical tests of the random picks: no reply is compared to Redis's,
// only sizes, membership, and how often each member comes.

// uniform fails unless counts look like draws of equally likely
// categories: Pearson's chi-square under a bound six standard deviations
// above its mean, which a fair pick misses about once in a billion.
func uniform(t *testing.T, what string, counts map[string]int, categories int) {
	t.Helper()
	if len(counts) != categories {
		t.Fatalf("%s: %d categories seen, want %d: %v", what, len(counts), categories, counts)
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	exp := float64(total) / float64(categories)
	chi := 0.0
	for _, c := range counts {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	df := float64(categories - 1)
	if bound := df + 6*math.Sqrt(2*df); chi > bound {
		t.Fatalf("%s: chi-square %.1f over %d categories, bound %.1f: %v", what, chi, categories, bound, counts)
	}
}

// members runs one request on d and returns the bulk strings of its reply
// (RESP2: pairs flat).
func members(t *testing.T, d *db, line string) []string {
	t.Helper()
	n := parseNode(d.do(2, Args(line)))
	if n.line[0] == '-' {
		t.Fatalf("%s: %s", line, n.line)
	}
	if n.line[0] == '$' {
		return []string{strings.SplitN(n.line, "\r\n", 2)[1]}
	}
	var out []string
	for _, e := range n.elems {
		out = append(out, strings.SplitN(e.line, "\r\n", 2)[1])
	}
	return out
}

func TestDistinctUniform(t *testing.T) {
	for _, tc := range []struct {
		n, count int
		ordered  bool
	}{
		{10, 3, true}, {10, 1, true}, {10, 9, true},
		{10, 4, false}, {10, 9, false}, // a partial shuffle
		{100, 5, false}, {50, 2, false}, // picks and a map
	} {
		name := fmt.Sprintf("distinct(%d, %d, %v)", tc.n, tc.count, tc.ordered)
		single := map[string]int{}
		subsets := map[string]int{}
		for range 20000 {
			got := distinct(tc.n, tc.count, tc.ordered)
			if len(got) != tc.count {
				t.Fatalf("%s: %d picks", name, len(got))
			}
			if tc.ordered && !slices.IsSorted(got) {
				t.Fatalf("%s: not in order: %v", name, got)
			}
			sorted := slices.Sorted(slices.Values(got))
			if len(slices.Compact(slices.Clone(sorted))) != tc.count || sorted[0] < 0 || sorted[len(sorted)-1] >= tc.n {
				t.Fatalf("%s: %v", name, got)
			}
			for _, i := range got {
				single[strconv.Itoa(i)]++
			}
			if tc.n <= 10 {
				subsets[fmt.Sprint(sorted)]++
			}
		}
		uniform(t, name+" members", single, tc.n)
		if tc.n <= 10 {
			uniform(t, name+" subsets", subsets, binomial(tc.n, tc.count))
		}
	}
}

func binomial(n, k int) int {
	r := 1
	for i := range k {
		r = r * (n - i) / (i + 1)
	}
	return r
}

func TestSRandMemberUniform(t *testing.T) {
	for _, setup := range []string{"SADD s 1 2 3 4 5 6 7 8", "SADD s a b c d e f g h"} {
		d := newDB()
		d.do(2, Args(setup))
		for _, tc := range []struct {
			line     string
			n        int
			distinct bool
		}{
			{"SRANDMEMBER s", 1, true},
			{"SRANDMEMBER s 1", 1, true},
			{"SRANDMEMBER s 3", 3, true},
			{"SRANDMEMBER s 7", 7, true},
			{"SRANDMEMBER s -5", 5, false},
			{"SRANDMEMBER s -20", 20, false}, // from a pool, in Reply
		} {
			counts := map[string]int{}
			for range 4000 {
				got := members(t, d, tc.line)
				if len(got) != tc.n {
					t.Fatalf("%s: %d members, want %d", tc.line, len(got), tc.n)
				}
				if tc.distinct && len(slices.Compact(slices.Sorted(slices.Values(got)))) != tc.n {
					t.Fatalf("%s: repeats: %v", tc.line, got)
				}
				for _, m := range got {
					counts[m]++
				}
			}
			uniform(t, setup+": "+tc.line, counts, 8)
		}
	}
}

func TestSPopUniform(t *testing.T) {
	for _, tc := range []struct {
		line string
		n    int
	}{
		{"SPOP s", 1},
		{"SPOP s 2", 2}, // one by one
		{"SPOP s 7", 7}, // keeps 1, a new set
		{"SPOP s 8", 8}, // all of it
	} {
		for _, members0 := range []string{"1 2 3 4 5 6 7 8", "a b c d e f g h"} {
			counts := map[string]int{}
			for range 3000 {
				d := newDB()
				d.do(2, Args("SADD s "+members0))
				got := members(t, d, tc.line)
				left := members(t, d, "SMEMBERS s")
				if len(got) != tc.n || len(got)+len(left) != 8 {
					t.Fatalf("%s: popped %v, left %v", tc.line, got, left)
				}
				all := slices.Sorted(slices.Values(append(got, left...)))
				if strings.Join(all, " ") != members0 {
					t.Fatalf("%s: popped %v and left %v of %s", tc.line, got, left, members0)
				}
				for _, m := range got {
					counts[m]++
				}
			}
			uniform(t, members0+": "+tc.line, counts, 8)
		}
	}
}

func TestHRandFieldUniform(t *testing.T) {
	d := newDB()
	d.do(2, Args("HSET h a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8"))
	d2 := newDB() // a hash table to Redis: more fields than a listpack holds
	d2.do(2, Args(fill("HSET h", "f", 600, true)))
	for _, tc := range []struct {
		d        *db
		line     string
		n        int
		distinct bool
		fields   int
	}{
		{d, "HRANDFIELD h", 1, true, 8},
		{d, "HRANDFIELD h 3 WITHVALUES", 3, true, 8},
		{d, "HRANDFIELD h 6", 6, true, 8},
		{d, "HRANDFIELD h -6 WITHVALUES", 6, false, 8},
		{d, "HRANDFIELD h -30 WITHVALUES", 30, false, 8},
		{d2, "HRANDFIELD h 50 WITHVALUES", 50, true, 600},
		{d2, "HRANDFIELD h 300", 300, true, 600},
		{d2, "HRANDFIELD h -40", 40, false, 600},
	} {
		counts := map[string]int{}
		for range 1500 {
			got := members(t, tc.d, tc.line)
			withValues := strings.HasSuffix(tc.line, "WITHVALUES")
			var fields []string
			for i := 0; i < len(got); i++ {
				fields = append(fields, got[i])
				if withValues {
					if "v"+got[i][1:] != got[i+1] && got[i+1] != strconv.Itoa(int(got[i][0]-'a'+1)) {
						t.Fatalf("%s: field %s with value %s", tc.line, got[i], got[i+1])
					}
					i++
				}
			}
			if len(fields) != tc.n {
				t.Fatalf("%s: %d fields, want %d", tc.line, len(fields), tc.n)
			}
			if tc.distinct && len(slices.Compact(slices.Sorted(slices.Values(fields)))) != tc.n {
				t.Fatalf("%s: repeats: %v", tc.line, fields)
			}
			for _, f := range fields {
				counts[f]++
			}
		}
		uniform(t, tc.line, counts, tc.fields)
	}
}

// countingWriter counts what is written, and gives up (panics) past a
// bound: enough to read how a huge reply starts.
type countingWriter struct {
	RESPBuffer
	arrays []int
	bulks  int
	limit  int
}

type gaveUp struct{}

func (w *countingWriter) Array(n int) { w.arrays = append(w.arrays, n) }
func (w *countingWriter) Set(n int)   { w.arrays = append(w.arrays, n) }
func (w *countingWriter) Bulk(b []byte) {
	if w.bulks++; w.bulks > w.limit {
		panic(gaveUp{})
	}
}

func replyUntil(op Command, w *countingWriter) {
	defer func() {
		if r := recover(); r != nil && r != (gaveUp{}) {
			panic(r)
		}
	}()
	op.Reply(w)
}

// A huge negative count costs Run no more than a copy of the value: the
// picks are made as the reply is written, as Redis makes them.
func TestHugeCounts(t *testing.T) {
	for _, tc := range []struct {
		setup, line string
		announced   int
	}{
		{"SADD s a b c", "SRANDMEMBER s -5000000000", 5000000000},
		{"SADD s a b c", "SRANDMEMBER s -9223372036854775807", 9223372036854775807},
		{"HSET h a 1 b 2", "HRANDFIELD h -9223372036854775807", 9223372036854775807},
		{"HSET h a 1 b 2", "HRANDFIELD h -4611686018427387903 WITHVALUES", 9223372036854775806},
		{"SADD s a b c", "SRANDMEMBER s 9223372036854775807", 3},
		{"SADD s a b c", "SPOP s 9223372036854775807", 3},
		{"HSET h a 1 b 2", "HRANDFIELD h 2147483648 WITHVALUES", 4},
	} {
		d := newDB()
		d.do(2, Args(tc.setup))
		args := Args(tc.line)
		op, err := parsers[strings.ToLower(string(args[0]))](args)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		key := string(args[1])
		s := NewSlots([]string{key}, &DefaultLimits)
		s.Load(0, d.vals[key], false)
		if op.Writes() == backends.ReadOnly {
			allocs := testing.AllocsPerRun(1, func() {
				if err := op.Run(s); err != nil {
					t.Fatalf("%s: %v", tc.line, err)
				}
			})
			if allocs > 10 {
				t.Errorf("%s: Run allocates %v times", tc.line, allocs)
			}
		}
		if err := op.Run(s); err != nil {
			t.Fatal(err)
		}
		w := &countingWriter{limit: 1000}
		replyUntil(op, w)
		if len(w.arrays) == 0 || w.arrays[0] != tc.announced {
			t.Errorf("%s: announced %v, want %d", tc.line, w.arrays, tc.announced)
		}
	}
}

var _ Writer = (*countingWriter)(nil)
