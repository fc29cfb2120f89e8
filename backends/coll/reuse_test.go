package coll

import (
	"bytes"
	"reflect"
	"testing"
)

// TestReparseIsAFreshParse: an Op parsed, run and answered, then parsed
// into again, is the Op a fresh parse makes of the second request, also
// after a request its parser refused; a released Op holds no request.
func TestReparseIsAFreshParse(t *testing.T) {
	for _, tc := range []struct{ setup, first, bad, second string }{
		{"RPUSH k a b c d e", "LPOP k 3", "LPOP k x", "LPOP k"},
		{"RPUSH k a b c d e", "RPOP k", "", "RPOP k 2"},
		{"RPUSH k a", "LPUSH k a b c", "", "LPUSH k d"},
		{"RPUSH k a", "RPUSHX k a", "", "RPUSHX k b c"},
		{"SADD k x", "SADD k a b", "", "SADD k c"},
		{"SADD k a b c d", "SPOP k 3", "SPOP k -1", "SPOP k"},
		{"HSET k f v", "HSET k f v g w", "HSET k f v g", "HSET k f x"},
		{"HSET k f v", "HMSET k f v", "", "HMSET k a b"},
		{"HSET k f v", "HGET k f", "", "HGET k g"},
		{"HSET k f v", "HSTRLEN k f", "", "HSTRLEN k f"},
		{"ZADD k 1 a", "ZADD k NX CH 1 a 2 b", "ZADD k nan a", "ZADD k 3 c"},
		{"ZADD k 1 a", "ZINCRBY k 2 a", "ZINCRBY k x a", "ZINCRBY k 3 b"},
	} {
		s := NewSlots([]string{"k"}, &DefaultLimits)
		run := func(line string) Command {
			t.Helper()
			args := Args(line)
			op, err := parsers[string(bytes.ToLower(args[0]))](args)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if err := op.Run(s); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return op
		}
		run(tc.setup)
		op := run(tc.first)
		if tc.bad != "" {
			if ok, err := Reparse(op, Args(tc.bad)); !ok || err == nil {
				t.Fatalf("%s into %s: %v, %v; want it refused", tc.bad, tc.first, ok, err)
			}
		}
		Release(op)
		if op.Request().Args != nil {
			t.Errorf("%s released: still holds its request", tc.first)
		}
		if ok, err := Reparse(op, Args(tc.second)); !ok || err != nil {
			t.Fatalf("%s into %s: %v, %v", tc.second, tc.first, ok, err)
		}
		want, err := parsers[string(bytes.ToLower(Args(tc.second)[0]))](Args(tc.second))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(op, want) {
			t.Errorf("%s parsed into %s:\n%+v\nwant a fresh parse's\n%+v", tc.second, tc.first, op, want)
		}
	}
	if ok, _ := Reparse(mustParse(t, "LRANGE k 0 -1"), Args("LRANGE k 0 1")); ok {
		t.Error("LRANGE reparsed: only the commands that implement it are")
	}
}

func mustParse(t *testing.T, line string) Command {
	t.Helper()
	args := Args(line)
	op, err := parsers[string(bytes.ToLower(args[0]))](args)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
