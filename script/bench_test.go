package script

import "testing"

// BenchmarkEvalSHALockAcquire runs redis-py's lock release script by
// EVALSHA against the fake command layer: the cost of a cached script.
func BenchmarkEvalSHALock(b *testing.B) {
	e := New(Options{})
	db := newFakeDB()
	sha := e.Script(argv("SCRIPT", "LOAD", redisPyRelease)).Text()
	args := argv("EVALSHA", sha, "1", "lock", "tok1")
	b.ReportAllocs()
	for b.Loop() {
		db.m["lock"] = "tok1"
		if v := e.Eval(db, args); v.Kind != KindInt {
			b.Fatal(resp2(v))
		}
	}
}

// BenchmarkNewVM is what a fresh Lua state with Redis's environment costs,
// which the pool saves on every run.
func BenchmarkNewVM(b *testing.B) {
	e := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		v := newVM(e)
		v.L.Close()
	}
}
