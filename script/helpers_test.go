package script

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeDB is a test double of the command layer: GET, SET [NX] [PX ms],
// INCR, INCRBY, DEL, PEXPIRE, PING, HGETALL (empty) in a map, replying as
// the proxy would, with the errors Redis gives.
type fakeDB struct {
	mu  sync.Mutex
	m   map[string]string
	ttl map[string]int64
}

func newFakeDB() *fakeDB { return &fakeDB{m: map[string]string{}, ttl: map[string]int64{}} }

var writeCmds = map[string]bool{"set": true, "incr": true, "incrby": true, "del": true, "pexpire": true, "setex": true}

func (f *fakeDB) Call(run *Run, args [][]byte) Value {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.ToLower(string(args[0]))
	arity := map[string]int{"get": 2, "set": -3, "incr": 2, "incrby": 3, "del": -2, "pexpire": 3, "ping": -1, "hgetall": 2, "pttl": 2, "exists": -2, "setex": 4}
	n, ok := arity[name]
	switch {
	case name == "eval" || name == "multi":
		return Error(ErrNotAllowed)
	case !ok:
		return Error(ErrUnknownCommand)
	case n > 0 && len(args) != n || n < 0 && len(args) < -n:
		return Error(ErrWrongArity)
	}
	if writeCmds[name] {
		if run.ReadOnly {
			return Error(ErrWriteReadOnly)
		}
		run.MarkWrite()
	}
	key := ""
	if len(args) > 1 {
		key = string(args[1])
	}
	switch name {
	case "ping":
		return Status("PONG")
	case "get":
		v, ok := f.m[key]
		if !ok {
			return Null()
		}
		return BulkString(v)
	case "set":
		nx := false
		var px int64
		for i := 3; i < len(args); i++ {
			switch strings.ToLower(string(args[i])) {
			case "nx":
				nx = true
			case "px":
				i++
				px, _ = strconv.ParseInt(string(args[i]), 10, 64)
			}
		}
		if _, ok := f.m[key]; ok && nx {
			return Null()
		}
		f.m[key] = string(args[2])
		f.ttl[key] = px
		return Status("OK")
	case "incr", "incrby":
		by := int64(1)
		if name == "incrby" {
			by, _ = strconv.ParseInt(string(args[2]), 10, 64)
		}
		cur := int64(0)
		if v, ok := f.m[key]; ok {
			var err error
			cur, err = strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Error("ERR value is not an integer or out of range")
			}
		}
		cur += by
		f.m[key] = strconv.FormatInt(cur, 10)
		return Int(cur)
	case "del":
		n := 0
		for _, k := range args[1:] {
			if _, ok := f.m[string(k)]; ok {
				delete(f.m, string(k))
				n++
			}
		}
		return Int(int64(n))
	case "pexpire":
		if _, ok := f.m[key]; !ok {
			return Int(0)
		}
		f.ttl[key], _ = strconv.ParseInt(string(args[2]), 10, 64)
		return Int(1)
	case "pttl":
		if _, ok := f.m[key]; !ok {
			return Int(-2)
		}
		return Int(f.ttl[key])
	case "exists":
		n := 0
		for _, k := range args[1:] {
			if _, ok := f.m[string(k)]; ok {
				n++
			}
		}
		return Int(int64(n))
	case "setex":
		f.m[key] = string(args[3])
		f.ttl[key], _ = strconv.ParseInt(string(args[2]), 10, 64)
		f.ttl[key] *= 1000
		return Status("OK")
	case "hgetall":
		if run.Resp() == 3 {
			return Map()
		}
		return Array()
	}
	return Error(ErrUnknownCommand)
}

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// resp2 renders a reply as RESP2 text, the form the tests compare.
func resp2(v Value) string { return string(AppendReply(nil, v, 2)) }

func eval(t *testing.T, e *Engine, c Caller, args ...string) string {
	t.Helper()
	return resp2(e.Eval(c, argv(args...)))
}
