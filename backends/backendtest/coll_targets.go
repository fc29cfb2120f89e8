package backendtest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// target answers a request in RESP: the store under test, the reference,
// or (this package's own test) redis-server.
type target interface {
	do(t *testing.T, proto int, args [][]byte) []byte
}

// coll.Commands, TYPE and OBJECT (ENCODING).
var parsers = func() map[string]coll.Spec {
	m := map[string]coll.Spec{
		"type":   {Name: "type", Parse: coll.ParseType, Arity: 2},
		"object": {Name: "object", Parse: coll.ParseObjectEncoding, Arity: 3},
	}
	for _, c := range coll.Commands {
		m[c.Name] = c
	}
	return m
}()

// table does. A script's request that does not parse is the script's
// error: a parse error never reaches a store (coll's own tests cover
// them).
func parse(t *testing.T, args [][]byte) coll.Command {
	t.Helper()
	name := strings.ToLower(string(args[0]))
	c, ok := parsers[name]
	if !ok {
		t.Fatalf("no command %q", name)
	}
	if (c.Arity > 0 && len(args) != c.Arity) || (c.Arity < 0 && len(args) < -c.Arity) {
		t.Fatalf("%q: wrong number of arguments", args)
	}
	op, err := c.Parse(args)
	if err != nil {
		t.Fatalf("%q does not parse: %v", args, err)
	}
	return op
}

// reply a store passed on, a Blocker's timeout when it did not pop, or
// the Op's own.
func render(proto int, op coll.Command, err error) []byte {
	if err != nil {
		return errorReply(err)
	}
	w := &coll.RESPBuffer{Proto: proto}
	if bl, blocking := op.(coll.Blocker); blocking && !bl.Ready() && op.Request().Reply.Kind == backends.ReplyNone {
		bl.TimedOut(w)
	} else {
		coll.Answer(w, op)
	}
	return w.Bytes()
}

// storeTarget runs requests on a Backend: collection commands through Do,
// the few string and key commands scripts use (SET, GET, DEL, EXISTS,
// COPY [REPLACE], RENAME) through its methods.
type storeTarget struct {
	b       backends.Backend
	generic bool
}

func (s *storeTarget) do(t *testing.T, proto int, args [][]byte) []byte {
	t.Helper()
	w := &coll.RESPBuffer{Proto: proto}
	c := ctx(t)
	switch strings.ToLower(string(args[0])) {
	case "set":
		if _, err := s.b.Set(c, string(args[1]), args[2], backends.SetOptions{}); err != nil {
			return errorReply(err)
		}
		w.Status("OK")
		return w.Bytes()
	case "get":
		v, ok, err := s.b.Get(c, string(args[1]))
		return getReply(w, v, ok, err)
	case "copy", "rename":
		o := backends.CopyOptions{Replace: len(args) > 3 && strings.EqualFold(string(args[3]), "replace")}
		rename := strings.EqualFold(string(args[0]), "rename")
		if rename {
			o = backends.CopyOptions{Replace: true, Move: true}
		}
		r, err := capability[backends.Copier](t, s.b).Copy(c, string(args[1]), string(args[2]), o)
		if err != nil {
			return errorReply(err)
		}
		copyReply(w, rename, r)
		return w.Bytes()
	case "del", "exists":
		keys := keysOf(args, seq(1, len(args)))
		var n int64
		var err error
		if strings.EqualFold(string(args[0]), "del") {
			n, err = s.b.Del(c, keys)
		} else {
			n, err = s.b.Exists(c, keys)
		}
		if err != nil {
			return errorReply(err)
		}
		w.Int(n)
		return w.Bytes()
	}
	op := parse(t, args)
	req := op.Request()
	req.RESP = proto
	var run backends.Op = op
	if s.generic {
		run = opaqueOp{op}
	}
	return render(proto, op, s.b.Do(c, keysOf(args, req.KeyAt), run))
}

// getReply answers GET as Redis does: the value, nil, or the error.
func getReply(w *coll.RESPBuffer, v []byte, ok bool, err error) []byte {
	switch {
	case err != nil:
		return errorReply(err)
	case ok:
		w.Bulk(v)
	default:
		w.Null()
	}
	return w.Bytes()
}

// copyReply answers COPY (r: what Copy did) or RENAME as Redis does.
func copyReply(w *coll.RESPBuffer, rename bool, r backends.CopyResult) {
	switch {
	case !rename && r == backends.Copied:
		w.Int(1)
	case !rename:
		w.Int(0)
	case r == backends.CopyNoSource:
		w.Error("ERR no such key")
	default:
		w.Status("OK")
	}
}

// opaqueOp hides an Op's type (and so its statement of its own, on a store
// that has one), keeping the request it came from (Passable).
type opaqueOp struct{ coll.Command }

// seq is the integers from i up to j (excluded).
func seq(i, j int) []int {
	s := make([]int, 0, j-i)
	for ; i < j; i++ {
		s = append(s, i)
	}
	return s
}

// refDB is the reference: collections and strings by key, and the Ops run
// on them through coll.Slots.
type refDB struct {
	vals map[string]backends.Value
	strs map[string][]byte
}

func newRefDB() *refDB { return &refDB{vals: map[string]backends.Value{}, strs: map[string][]byte{}} }

func (d *refDB) do(t *testing.T, proto int, args [][]byte) []byte {
	t.Helper()
	w := &coll.RESPBuffer{Proto: proto}
	switch strings.ToLower(string(args[0])) {
	case "set":
		k := string(args[1])
		delete(d.vals, k)
		d.strs[k] = bytes.Clone(args[2])
		w.Status("OK")
		return w.Bytes()
	case "get":
		k := string(args[1])
		v, ok := d.strs[k]
		var err error
		if d.vals[k] != nil {
			err = backends.ErrWrongType
		}
		return getReply(w, v, ok, err)
	case "copy", "rename":
		rename := strings.EqualFold(string(args[0]), "rename")
		src, dst := string(args[1]), string(args[2])
		replace := rename || len(args) > 3 && strings.EqualFold(string(args[3]), "replace")
		str, isStr := d.strs[src]
		_, dstStr := d.strs[dst]
		r := backends.Copied
		switch {
		case !isStr && d.vals[src] == nil:
			r = backends.CopyNoSource
		case !replace && (dstStr || d.vals[dst] != nil):
			r = backends.CopyDstExists
		case isStr:
			delete(d.vals, dst)
			d.strs[dst] = str
		default:
			delete(d.strs, dst)
			d.vals[dst] = d.vals[src].Clone()
		}
		if rename && r == backends.Copied {
			delete(d.strs, src)
			delete(d.vals, src)
		}
		copyReply(w, rename, r)
		return w.Bytes()
	case "del", "exists":
		del := strings.EqualFold(string(args[0]), "del")
		n := 0
		for _, a := range args[1:] {
			k := string(a)
			_, s := d.strs[k]
			if s || d.vals[k] != nil {
				n++
			}
			if del {
				delete(d.strs, k)
				delete(d.vals, k)
			}
		}
		w.Int(int64(n))
		return w.Bytes()
	}
	op := parse(t, args)
	return render(proto, op, d.run(op))
}

// run runs op on the reference's values.
func (d *refDB) run(op coll.Command) error {
	req := op.Request()
	keys := keysOf(req.Args, req.KeyAt)
	s := coll.NewSlots(keys, &coll.DefaultLimits)
	for i, k := range keys {
		_, str := d.strs[k]
		s.Load(s.Slot(i), d.vals[k], str)
	}
	err := op.Run(s)
	for i, k := range keys {
		switch v, replaced := s.Value(s.Slot(i)); {
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
	return err
}

// small reports whether the reference holds k in a small encoding
// (listpack, intset, or no value): one whose order Redis fixes.
func (d *refDB) small(k string) bool {
	v := d.vals[k]
	if v == nil {
		return true
	}
	enc := v.(interface{ Encoding(*coll.Limits) string }).Encoding(&coll.DefaultLimits)
	return enc != "hashtable" && enc != "skiplist"
}
