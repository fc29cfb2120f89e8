package coll

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// ZSCAN of large sets (paged, in no order Redis shares) and ZRANDMEMBER
// (random): compared by what they return, not byte for byte.

// scanReply reads a ZSCAN reply in RESP2: the cursor and the flat items.
func scanReply(t *testing.T, b []byte) (string, []string) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(b))
	line := func() string {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading %q: %v", b, err)
		}
		return l[:len(l)-2]
	}
	bulk := func() string {
		n, _ := strconv.Atoi(line()[1:])
		return line()[:n]
	}
	if line() != "*2" {
		t.Fatalf("not a scan reply: %q", b)
	}
	cursor := bulk()
	n, _ := strconv.Atoi(line()[1:])
	items := make([]string, n)
	for i := range items {
		items[i] = bulk()
	}
	return cursor, items
}

// scanAll scans key to the end with do, and returns member -> score text.
func scanAll(t *testing.T, do func(args [][]byte) []byte, key string, extra ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	cursor := "0"
	for range 10000 {
		args := Args("ZSCAN " + key + " " + cursor)
		for _, e := range extra {
			args = append(args, []byte(e))
		}
		var items []string
		cursor, items = scanReply(t, do(args))
		for i := 0; i < len(items); i += 2 {
			got[items[i]] = items[i+1]
		}
		if cursor == "0" {
			return got
		}
	}
	t.Fatal("scan does not end")
	return nil
}

func TestZScanLarge(t *testing.T) {
	script := append(bigScript("big", 500), "ZADD big -0 zero 1e17 e17 0.1 tenth")
	rc := dialRedis(t, 2)
	d := newDB()
	for _, line := range script {
		rc.do(t, Args(line))
		d.do(2, Args(line))
	}
	for _, extra := range [][]string{nil, {"COUNT", "7"}, {"MATCH", "m1*", "COUNT", "3"}, {"COUNT", "1000"}} {
		want := scanAll(t, func(args [][]byte) []byte { return rc.do(t, args) }, "big", extra...)
		got := scanAll(t, func(args [][]byte) []byte { return d.do(2, args) }, "big", extra...)
		if len(got) != len(want) {
			t.Fatalf("%v: scanned %d members, want %d", extra, len(got), len(want))
		}
		for m, s := range want {
			if got[m] != s {
				t.Fatalf("%v: member %q scanned with score %q, want %q", extra, m, got[m], s)
			}
		}
	}
}

// A member present for the whole scan is returned at least once, however
// members are added and removed meanwhile.
func TestZScanGuarantee(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 2))
		z := NewZSet()
		for i := range 300 {
			z.Add("m"+strconv.Itoa(i), float64(i))
		}
		steady := map[string]bool{} // members never removed
		for i := range 300 {
			if i%3 == 0 {
				steady["m"+strconv.Itoa(i)] = true
			}
		}
		seen := map[string]bool{}
		s := NewSlots([]string{"z"}, &DefaultLimits)
		s.Load(0, z, false)
		cursor := "0"
		for pages := 0; ; pages++ {
			op, err := ParseZScan(Args("ZSCAN z " + cursor + " COUNT " + strconv.Itoa(1+r.IntN(20))))
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Run(s); err != nil {
				t.Fatal(err)
			}
			sc := op.(*Scan)
			for i := 0; i < len(sc.elems); i += 2 {
				seen[string(sc.elems[i])] = true
			}
			if sc.next == 0 {
				break
			}
			cursor = strconv.FormatUint(sc.next, 10)
			// Churn: remove some members that are not steady, add new ones.
			for range r.IntN(15) {
				m, _ := z.At(r.IntN(z.Len()))
				if !steady[m] {
					z.Del(m)
				}
			}
			for range r.IntN(15) {
				z.Add(fmt.Sprintf("new%d-%d", pages, r.IntN(1000)), r.Float64())
			}
		}
		for m := range steady {
			if !seen[m] {
				t.Fatalf("seed %d: %q, present all along, never returned", seed, m)
			}
		}
	}
}

// run parses and runs one request on slots of one key holding z.
func runOn(t testing.TB, z *ZSet, line string) Command {
	t.Helper()
	args := Args(line)
	op, err := parsers[string(bytes.ToLower(args[0]))](args)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSlots([]string{string(args[1])}, &DefaultLimits)
	s.Load(0, z, false)
	if err := op.Run(s); err != nil {
		t.Fatal(err)
	}
	return op
}

func TestZRandMemberCounts(t *testing.T) {
	z := NewZSet()
	for i := range 200 {
		z.Add("m"+strconv.Itoa(i), float64(i))
	}
	for _, tc := range []struct {
		count    int
		want     int
		distinct bool
	}{
		{1, 1, true}, {5, 5, true}, {66, 66, true}, {67, 67, true}, {150, 150, true},
		{199, 199, true}, {200, 200, true}, {1000, 200, true},
		{-1, 1, false}, {-5, 5, false}, {-1000, 1000, false},
	} {
		op := runOn(t, z, "ZRANDMEMBER z "+strconv.Itoa(tc.count)+" WITHSCORES").(*ZRandMember)
		if len(op.picks) != tc.want {
			t.Fatalf("count %d: %d picks, want %d", tc.count, len(op.picks), tc.want)
		}
		seen := map[string]bool{}
		for _, p := range op.picks {
			s, ok := z.Score(p.Member)
			if !ok || s != p.Score {
				t.Fatalf("count %d: picked %q %v, not in the set", tc.count, p.Member, p.Score)
			}
			if tc.distinct && seen[p.Member] {
				t.Fatalf("count %d: %q picked twice", tc.count, p.Member)
			}
			seen[p.Member] = true
		}
	}
	if _, err := ParseZRandMember(Args("ZRANDMEMBER z -9223372036854775807")); err != nil {
		t.Fatal(err)
	}
	op := runOnErr(t, z, "ZRANDMEMBER z -"+strconv.Itoa(maxRandomPicks+1))
	if op != errOutOfRange {
		t.Fatalf("a count past maxRandomPicks: %v", op)
	}
}

func runOnErr(t *testing.T, z *ZSet, line string) error {
	args := Args(line)
	op, err := parsers[string(bytes.ToLower(args[0]))](args)
	if err != nil {
		return err
	}
	s := NewSlots([]string{string(args[1])}, &DefaultLimits)
	s.Load(0, z, false)
	return op.Run(s)
}

// chiSquare of counts against a uniform distribution; with k-1 degrees of
// freedom its mean is k-1 and its deviation sqrt(2(k-1)).
func chiSquare(counts map[string]int, k, n int) float64 {
	exp := float64(n) / float64(k)
	x := 0.0
	for _, c := range counts {
		x += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	x += float64(k-len(counts)) * exp // members never picked
	return x
}

func TestZRandMemberUniform(t *testing.T) {
	const k = 50
	z := NewZSet()
	for i := range k {
		z.Add("m"+strconv.Itoa(i), float64(i%3))
	}
	// Remove and re-add some, so the dense slice is not insertion order.
	for i := 0; i < k; i += 4 {
		z.Del("m" + strconv.Itoa(i))
	}
	for i := 0; i < k; i += 4 {
		z.Add("m"+strconv.Itoa(i), 7)
	}
	limit := float64(k-1) + 6*math.Sqrt(2*float64(k-1)) // six deviations
	for _, line := range []string{"ZRANDMEMBER z", "ZRANDMEMBER z -10", "ZRANDMEMBER z 3", "ZRANDMEMBER z 20", "ZRANDMEMBER z 45"} {
		counts := map[string]int{}
		n := 0
		for n < 50000 {
			op := runOn(t, z, line).(*ZRandMember)
			for _, p := range op.picks {
				counts[p.Member]++
				n++
			}
		}
		if x := chiSquare(counts, k, n); x > limit {
			t.Errorf("%s: chi-square %.1f over %d picks, above %.1f: not uniform", line, x, n, limit)
		}
	}
}
