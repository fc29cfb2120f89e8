package coll

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

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
			args := Args(line)
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
				res := rc.do(t, Args(line))
				n := parseNode(res)
				if len(n.elems) == 0 {
					run(line, "")
					continue
				}
				var pop []string
				for _, e := range n.elems {
					pop = append(pop, string(bytes.SplitN([]byte(e.line), []byte("\r\n"), 2)[1]))
				}
				k := string(Args(line)[1])
				size := d.vals[k].Len()
				d.do(proto, Args("SREM "+k+" "+joinQuoted(pop)))
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
				enc := parseNode(rc.do(t, Args("OBJECT ENCODING "+k)))
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
	args := Args(line)
	enc := func(k string) string {
		return parseNode(rc.do(t, Args("OBJECT ENCODING "+k))).line
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
	defer rc.do(t, Args("DEL __t"))
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
			args := Args(line)
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
			if enc := parseNode(rc.do(t, Args("OBJECT ENCODING "+k))); bytes.Contains([]byte(enc.line), []byte("listpack")) {
				run("HGETALL "+k, "")
			} else {
				run("HGETALL "+k, "pairs")
			}
		}
	}
}
