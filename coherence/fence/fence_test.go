package fence

import (
	"sync"
	"testing"
)

// TestTokens: a fence invalidates the tokens taken before it, for its key's
// bucket only, and never those taken after it.
func TestTokens(t *testing.T) {
	var k Keys
	k.Init(1 << 10)
	a, b := k.Hash("t", "a"), k.Hash("t", "b")
	if a&k.mask == b&k.mask {
		t.Skip("the two keys share a bucket under this seed") // a 1 in 1024 chance
	}
	before := k.Token()
	if !k.Valid(before, a) || !k.Valid(before, b) {
		t.Fatal("nothing fenced yet, and a token is not valid")
	}
	if s := k.Fence(a); s != uint64(before)+1 {
		t.Fatalf("the fence took sequence %d, want %d", s, before+1)
	}
	if k.Valid(before, a) {
		t.Error("a token taken before a fence on its key is still valid")
	}
	if !k.Valid(before, b) {
		t.Error("a fence on one key invalidated another bucket")
	}
	if after := k.Token(); !k.Valid(after, a) {
		t.Error("a token taken after the fence is not valid")
	}
	if k.Hash("t", "a") != a {
		t.Error("Hash is not a function of scope and key")
	}
	if k.Hash("", "ta") == a || k.Hash("ta", "") == a {
		t.Error("Hash runs scope and key together")
	}
}

// TestRaiseNeverLowers: concurrent fences on one bucket leave it at the
// largest sequence, whatever order their stores land in.
func TestRaiseNeverLowers(t *testing.T) {
	var k Keys
	k.Init(1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				k.Fence(0)
			}
		})
	}
	wg.Wait()
	if got, want := k.buckets[0].Load(), k.seq.Load(); got != want {
		t.Fatalf("bucket at %d after the last fence took %d", got, want)
	}
	if !k.Valid(k.Token(), 0) || k.Valid(k.Token()-1, 0) {
		t.Fatal("the bucket does not stand at the last sequence")
	}
}
