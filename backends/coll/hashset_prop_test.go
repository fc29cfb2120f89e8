package coll

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// Property tests: Hash and Set under random changes, against naive models.

// hashModel is what a hash should hold: its fields in the order they were
// added (a listpack's order), their values, and its history.
type hashModel struct {
	order   []string
	vals    map[string]string
	maxLen  int
	maxElem int
}

func (m *hashModel) set(f, v string) {
	if _, ok := m.vals[f]; !ok {
		m.order = append(m.order, f)
	}
	m.vals[f] = v
	m.maxLen = max(m.maxLen, len(m.order))
	m.maxElem = max(m.maxElem, len(f), len(v))
}

func (m *hashModel) del(f string) {
	if _, ok := m.vals[f]; ok {
		delete(m.vals, f)
		m.order = slices.DeleteFunc(m.order, func(g string) bool { return g == f })
	}
}

func checkHash(t *testing.T, step int, h *Hash, m *hashModel, l *Limits) {
	t.Helper()
	if h.Len() != len(m.order) {
		t.Fatalf("step %d: Len %d, want %d", step, h.Len(), len(m.order))
	}
	var w int64
	for i := range h.Len() {
		f, v := h.At(i)
		if string(v) != m.vals[f] {
			t.Fatalf("step %d: field %q = %q, want %q", step, f, v, m.vals[f])
		}
		if h.idx[f] != int32(i) {
			t.Fatalf("step %d: idx[%q] = %d, want %d", step, f, h.idx[f], i)
		}
		w += int64(len(f)+len(v)) + perEntry
	}
	if len(h.idx) != h.Len() || h.Weight() != w {
		t.Fatalf("step %d: %d in the map, weight %d; want %d, %d", step, len(h.idx), h.Weight(), h.Len(), w)
	}
	small := int64(m.maxLen) <= l.HashMaxListpackEntries && int64(m.maxElem) <= l.HashMaxListpackValue
	if small != (h.Encoding(l) == "listpack") {
		t.Fatalf("step %d: encoding %s, want listpack %v", step, h.Encoding(l), small)
	}
	if small {
		for i, f := range m.order {
			if g, _ := h.At(i); g != f {
				t.Fatalf("step %d: field %d is %q, want %q (insertion order)", step, i, g, f)
			}
		}
	}
}

func TestHashProperties(t *testing.T) {
	l := DefaultLimits
	l.HashMaxListpackEntries, l.HashMaxListpackValue = 12, 6
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		h, m := NewHash(), &hashModel{vals: map[string]string{}}
		var clone *Hash
		var cloned map[string]string
		for step := range 400 {
			f := "f" + strconv.Itoa(r.IntN(20+round))
			j := &Journal{}
			h.Journal(j)
			want := map[string]struct{}{}
			switch r.IntN(3) {
			case 0, 1:
				v := string(bytes.Repeat([]byte{'v'}, r.IntN(6+round/10)))
				h.Set(h.Key([]byte(f)), []byte(v))
				m.set(f, v)
				want[f] = struct{}{}
			case 2:
				_, had := m.vals[f]
				if got := h.Del(f, &l); got != had {
					t.Fatalf("Del(%q) = %v, want %v", f, got, had)
				}
				m.del(f)
				if had {
					want[f] = struct{}{}
				}
			}
			h.Journal(nil)
			if !maps.Equal(j.Members, want) && len(want)+len(j.Members) > 0 {
				t.Fatalf("step %d: journal %v, want %v", step, j.Members, want)
			}
			checkHash(t, step, h, m, &l)
			if step == 100 {
				clone, cloned = h.Clone().(*Hash), maps.Clone(m.vals)
			}
		}
		if clone != nil {
			if clone.Len() != len(cloned) {
				t.Fatalf("clone changed: %d fields, want %d", clone.Len(), len(cloned))
			}
			for f, v := range cloned {
				if got, _ := clone.Get(f); string(got) != v {
					t.Fatalf("clone changed: %q = %q, want %q", f, got, v)
				}
			}
		}
	}
}

// setModel is what a set should hold, and its history.
type setModel struct {
	has    map[string]bool
	maxLen int
	wide   bool
}

func checkSet(t *testing.T, step int, s *Set, m *setModel, l *Limits) {
	t.Helper()
	if s.Len() != len(m.has) {
		t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(m.has))
	}
	var w int64
	for i := range s.Len() {
		e := s.At(i)
		if !m.has[e] || s.idx[e] != int32(i) {
			t.Fatalf("step %d: member %d %q: in the model %v, idx %d", step, i, e, m.has[e], s.idx[e])
		}
		w += int64(len(e)) + perEntry
	}
	if len(s.idx) != s.Len() || s.Weight() != w {
		t.Fatalf("step %d: %d in the map, weight %d; want %d, %d", step, len(s.idx), s.Weight(), s.Len(), w)
	}
	intset := !m.wide && int64(m.maxLen) <= l.SetMaxIntsetEntries
	if intset != (s.Encoding(l) == "intset") {
		t.Fatalf("step %d: encoding %s, want intset %v", step, s.Encoding(l), intset)
	}
	sorted := s.Sorted(l)
	if intset && !slices.IsSortedFunc(sorted, func(a, b string) int {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return int(min(max(x-y, -1), 1)) // no overflow: |x|, |y| are small here
	}) {
		t.Fatalf("step %d: an intset's members are not in order: %q", step, sorted)
	}
}

func TestSetProperties(t *testing.T) {
	l := DefaultLimits
	l.SetMaxIntsetEntries = 10
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 20 {
		s, m := NewSet(), &setModel{has: map[string]bool{}}
		for step := range 300 {
			e := strconv.Itoa(r.IntN(14) - 7)
			if r.IntN(40) == 0 {
				e = "x" + e
			}
			j := &Journal{}
			s.Journal(j)
			var touched bool
			switch r.IntN(3) {
			case 0, 1:
				added := s.Add(e)
				if added == m.has[e] {
					t.Fatalf("Add(%q) = %v with the member there: %v", e, added, m.has[e])
				}
				touched = added
				m.has[e] = true
				m.maxLen = max(m.maxLen, len(m.has))
				m.wide = m.wide || !isInt(e)
			case 2:
				removed := s.Rem(e)
				if removed != m.has[e] {
					t.Fatalf("Rem(%q) = %v, want %v", e, removed, m.has[e])
				}
				touched = removed
				delete(m.has, e)
			}
			s.Journal(nil)
			if _, ok := j.Members[e]; ok != touched || len(j.Members) > 1 {
				t.Fatalf("step %d: journal %v after a change of %q: %v", step, j.Members, e, touched)
			}
			checkSet(t, step, s, m, &l)
			if step == 150 && s.Len() > 0 {
				c := s.Clone().(*Set)
				before := slices.Sorted(slices.Values(c.members))
				s.Rem(s.At(0))
				s.Add("new" + strconv.Itoa(round))
				if got := slices.Sorted(slices.Values(c.members)); !slices.Equal(got, before) {
					t.Fatalf("clone changed: %q, want %q", got, before)
				}
				m.has = map[string]bool{}
				for _, e := range s.members {
					m.has[e] = true
				}
				m.wide = true
			}
		}
		_ = round
	}
}

// cmpInts orders canonical integers as their values.
func TestCmpInts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var ns []int64
	for range 2000 {
		n := r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			n = -n
		}
		ns = append(ns, n)
	}
	ns = append(ns, 0, -1, 1, 9, 10, -9, -10, -1<<63, 1<<63-1)
	ss := make([]string, len(ns))
	for i, n := range ns {
		ss[i] = strconv.FormatInt(n, 10)
	}
	sortInts(ss)
	slices.Sort(ns)
	for i, n := range ns {
		if ss[i] != strconv.FormatInt(n, 10) {
			t.Fatalf("at %d: %s, want %d", i, ss[i], n)
		}
	}
}

// Random scripts of set commands, against redis-server: every reply the
// same, those Redis leaves unordered compared as sets, and a set's
// members in order whenever Redis says it is an intset.
func TestSetRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	keys := []string{"a", "b", "c", "d"}
	member := func() string {
		if r.IntN(30) == 0 {
			return "m" + strconv.Itoa(r.IntN(5))
		}
		return strconv.Itoa(r.IntN(700) - 50)
	}
	key := func() string { return keys[r.IntN(len(keys))] }
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		var last []string // the script so far, for a failure's message
		run := func(line string, mode string) {
			args := split(line)
			want, got := rc.do(t, args), d.do(proto, args)
			if mode != "" {
				want, got = []byte(canon(mode, want)), []byte(canon(mode, got))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q\nafter %q", proto, short(line), short(string(got)), short(string(want)), last[max(len(last)-3, 0):])
			}
		}
		for range 500 {
			var line string
			mode := "sorted"
			switch r.IntN(12) {
			case 0, 1, 2:
				line = "SADD " + key()
				for range 1 + r.IntN(60) {
					line += " " + member()
				}
				mode = ""
			case 3:
				line = "SREM " + key()
				for range 1 + r.IntN(40) {
					line += " " + member()
				}
				mode = ""
			case 4:
				line = fmt.Sprintf("SINTERSTORE %s %s %s", key(), key(), key())
				mode = ""
			case 5:
				line = fmt.Sprintf("SUNIONSTORE %s %s %s", key(), key(), key())
				mode = ""
			case 6:
				line = fmt.Sprintf("SDIFFSTORE %s %s %s %s", key(), key(), key(), key())
				mode = ""
			case 7:
				line = fmt.Sprintf("SMOVE %s %s %s", key(), key(), member())
				mode = ""
			case 8:
				line = fmt.Sprintf("SPOP %s %d", key(), r.IntN(40))
				mode = "count"
			case 9:
				line = fmt.Sprintf("SINTER %s %s", key(), key())
			case 10:
				line = fmt.Sprintf("SUNION %s %s", key(), key())
			case 11:
				line = fmt.Sprintf("SDIFF %s %s %s", key(), key(), key())
			}
			if mode == "sorted" && redisIntset(t, rc, line) {
				// Redis's order is fixed where it walks an intset.
				mode = ""
			}
			if mode == "count" {
				// Popped members are random: pop the same ones here.
				res := rc.do(t, split(line))
				n := parseNode(res)
				if len(n.elems) == 0 {
					run(line, "")
					continue
				}
				var pop []string
				for _, e := range n.elems {
					pop = append(pop, string(bytes.SplitN([]byte(e.line), []byte("\r\n"), 2)[1]))
				}
				k := string(split(line)[1])
				size := d.vals[k].Len()
				d.do(proto, split("SREM "+k+" "+joinQuoted(pop)))
				if rest := size - len(pop); rest > 0 && rest*5 <= len(pop) {
					d.vals[k].(*Set).rebuilt() // SPOP's third way makes a new set
				}
				last = append(last, line)
				continue
			}
			last = append(last, line)
			run(line, mode)
			for _, k := range keys {
				run("SCARD "+k, "")
				run("OBJECT ENCODING "+k, "")
				enc := parseNode(rc.do(t, split("OBJECT ENCODING "+k)))
				if bytes.Contains([]byte(enc.line), []byte("intset")) {
					run("SMEMBERS "+k, "")
				} else {
					run("SMEMBERS "+k, "sorted")
				}
			}
		}
	}
}

// redisIntset reports whether redis-server answers a SINTER, SUNION or
// SDIFF in an intset's order: SINTER walks its smallest set (all of them
// intsets here, then), the others build their result as a new set (which
// SUNIONSTORE and SDIFFSTORE show).
func redisIntset(t *testing.T, rc *redisConn, line string) bool {
	args := split(line)
	enc := func(k string) string {
		return parseNode(rc.do(t, split("OBJECT ENCODING "+k))).line
	}
	if is(args[0], "sinter") {
		for _, k := range args[1:] {
			if e := enc(string(k)); e != "$-1" && e != "_" && !bytes.Contains([]byte(e), []byte("intset")) {
				return false
			}
		}
		return true
	}
	store := append([][]byte{append(args[0][:len(args[0]):len(args[0])], "STORE"...), []byte("__t")}, args[1:]...)
	rc.do(t, store)
	defer rc.do(t, split("DEL __t"))
	return bytes.Contains([]byte(enc("__t")), []byte("intset"))
}

func joinQuoted(ms []string) string {
	var b bytes.Buffer
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "'%s'", m)
	}
	return b.String()
}

// Random scripts of hash commands, against redis-server: a small hash
// answers HGETALL in Redis's order, a large one as a set of pairs.
func TestHashRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	keys := []string{"a", "b"}
	field := func() string { return "f" + strconv.Itoa(r.IntN(40+r.IntN(600))) }
	value := func() string {
		if r.IntN(50) == 0 {
			return string(bytes.Repeat([]byte{'x'}, 65))
		}
		return strconv.Itoa(r.IntN(100))
	}
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		run := func(line string, mode string) {
			args := split(line)
			want, got := rc.do(t, args), d.do(proto, args)
			if mode != "" {
				want, got = []byte(canon(mode, want)), []byte(canon(mode, got))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q", proto, short(line), short(string(got)), short(string(want)))
			}
		}
		for range 300 {
			k := keys[r.IntN(len(keys))]
			var line string
			switch r.IntN(6) {
			case 0, 1:
				line = "HSET " + k
				for range 1 + r.IntN(30) {
					line += " " + field() + " " + value()
				}
			case 2:
				line = "HDEL " + k
				for range 1 + r.IntN(30) {
					line += " " + field()
				}
			case 3:
				line = fmt.Sprintf("HINCRBY %s %s %d", k, field(), r.IntN(100)-50)
			case 4:
				line = fmt.Sprintf("HINCRBYFLOAT %s %s %d.%d", k, field(), r.IntN(100)-50, r.IntN(1000))
			case 5:
				line = fmt.Sprintf("HSETNX %s %s %s", k, field(), value())
			}
			run(line, "")
			run("HLEN "+k, "")
			run("OBJECT ENCODING "+k, "")
			if enc := parseNode(rc.do(t, split("OBJECT ENCODING "+k))); bytes.Contains([]byte(enc.line), []byte("listpack")) {
				run("HGETALL "+k, "")
			} else {
				run("HGETALL "+k, "pairs")
			}
		}
	}
}

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
		d.do(3, split(fill("HSET h", "f", n, true)))
		d.do(3, split(fill("SADD s", "m", n, false)))
		d.do(3, split(fill("SADD t", "m", n/2, false)))
		d.do(3, split(ints("SADD i", 0, n/2)))
		for _, line := range reads {
			args := split(line)
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
			w1 := &respWriter{proto: 3}
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
			w2 := &respWriter{proto: 3}
			op.Reply(w2)
			if !strings.Contains(line, "RAND") && !bytes.Equal(w1.buf.Bytes(), w2.buf.Bytes()) {
				t.Fatalf("%s: the reply changed with the value:\n%q\n%q", line, short(w1.buf.String()), short(w2.buf.String()))
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
			once.do(3, split(l))
			twice.do(3, split(l))
		}
		want := once.do(3, split(line))
		args := split(line)
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
			w := &respWriter{proto: 3}
			if err := op.Run(sl); err != nil {
				w.buf.Write(errorReply(err))
			} else {
				op.Reply(w)
			}
			got = w.buf.Bytes()
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
				args := split(line)
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
				op.Reply(&respWriter{proto: 2})
			}
		}()
	}
	for range 4 {
		<-done
	}
}
