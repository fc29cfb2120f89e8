package coll

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The differential tests: each script of commands runs against a real
// redis-server 7 and through this package's Ops on a store of the test's
// own (db), and every reply must be the same bytes, in RESP2 and RESP3.

var redisAddr string

func TestMain(m *testing.M) {
	r, err := testenv.StartRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = r.Addr()
	code := m.Run()
	r.Stop()
	os.Exit(code)
}

// parsers are the commands the tests know, by lowercase name: every one of
// Commands, with its arity checked as the command table checks it, and a
// few of the tests' own.
var parsers = map[string]Parser{}

func init() {
	for _, c := range Commands {
		parsers[c.Name] = withArity(c.Arity, c.Parse)
	}
}

// withArity checks a request's length as the command table does.
func withArity(arity int, p Parser) Parser {
	return func(args [][]byte) (Command, error) {
		if (arity > 0 && len(args) != arity) || (arity < 0 && len(args) < -arity) {
			return nil, arityError(args[0])
		}
		return p(args)
	}
}

// arityOf is a command's arity in Commands; ok is false for none.
func arityOf(name string) (arity int, ok bool) {
	for _, c := range Commands {
		if c.Name == name {
			return c.Arity, true
		}
	}
	return 0, false
}

// commandNames are the names of Commands for which keep is true.
func commandNames(keep func(Spec) bool) []string {
	var names []string
	for _, c := range Commands {
		if keep(c) {
			names = append(names, c.Name)
		}
	}
	return names
}

// db is a store of the test's own: collections and strings by key.
type db struct {
	vals map[string]backends.Value
	strs map[string][]byte
}

func newDB() *db { return &db{vals: map[string]backends.Value{}, strs: map[string][]byte{}} }

// do runs one request through the Ops and returns its reply as RESP bytes.
// SET, GET and DEL are served by db itself, so scripts can make strings.
func (d *db) do(proto int, args [][]byte) []byte {
	w := &RESPBuffer{Proto: proto}
	name := strings.ToLower(string(args[0]))
	switch name {
	case "set":
		delete(d.vals, string(args[1]))
		d.strs[string(args[1])] = args[2]
		w.Status("OK")
		return w.Bytes()
	case "del":
		n := 0
		for _, k := range args[1:] {
			_, s := d.strs[string(k)]
			_, v := d.vals[string(k)]
			if s || v {
				n++
			}
			delete(d.strs, string(k))
			delete(d.vals, string(k))
		}
		w.Int(int64(n))
		return w.Bytes()
	}
	p, ok := parsers[name]
	if !ok {
		panic("no parser for " + name)
	}
	op, err := p(args)
	if err != nil {
		return errorReply(err)
	}
	req := op.Request()
	keys := make([]string, len(req.KeyAt))
	for i, at := range req.KeyAt {
		keys[i] = string(args[at])
	}
	s := NewSlots(keys, &DefaultLimits)
	for i, k := range keys {
		_, str := d.strs[k]
		s.Load(s.Slot(i), d.vals[k], str)
	}
	if err := op.Run(s); err != nil {
		return errorReply(err)
	}
	for i, k := range keys {
		v, replaced := s.Value(s.Slot(i))
		switch {
		case v == nil && (replaced || d.vals[k] != nil):
			delete(d.vals, k)
			if replaced {
				delete(d.strs, k)
			}
		case v != nil:
			delete(d.strs, k)
			d.vals[k] = v
		}
	}
	op.Reply(w)
	return w.Bytes()
}

func errorReply(err error) []byte {
	var r backends.Refusal
	switch {
	case errors.As(err, &r):
		return []byte("-" + string(r) + "\r\n")
	case errors.Is(err, backends.ErrWrongType):
		return []byte("-" + err.Error() + "\r\n")
	}
	return []byte("-ERR test: " + err.Error() + "\r\n")
}

// redisConn is a raw connection to the real server.
type redisConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRedis(t *testing.T, proto int) *redisConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", redisAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &redisConn{c: c, br: bufio.NewReader(c)}
	rc.do(t, Args("FLUSHALL"))
	if proto == 3 {
		rc.do(t, Args("HELLO 3"))
	}
	return rc
}

func (rc *redisConn) do(t *testing.T, args [][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := readReply(rc.br, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// readReply copies one whole RESP2/RESP3 reply from br to out.
func readReply(br *bufio.Reader, out *bytes.Buffer) error {
	line, err := br.ReadBytes('\n')
	if err != nil {
		return err
	}
	out.Write(line)
	body := string(bytes.TrimRight(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io_ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '*', '~', '>':
		n, _ := strconv.Atoi(body)
		for range max(n, 0) {
			if err := readReply(br, out); err != nil {
				return err
			}
		}
	case '%', '|':
		n, _ := strconv.Atoi(body)
		for range 2 * n {
			if err := readReply(br, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func io_ReadFull(br *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := br.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// same runs a script of command lines against redis-server and through the
// Ops, in RESP2 and RESP3, and fails on the first reply that differs.
func same(t *testing.T, script ...string) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		for _, line := range script {
			args := Args(line)
			want := rc.do(t, args)
			got := d.do(proto, args)
			if !bytes.Equal(got, want) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q", proto, line, got, want)
			}
		}
	}
}
