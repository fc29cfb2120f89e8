// Package fence holds the primitives of pgcache's coherence protocol that
// every coherent cache shares: read tokens, the fence sequence, the key
// buckets it is recorded in, and the fence key, the one spelling of a row's
// key that the triggers log, the backends compute and the listener reads.
//
// It imports nothing of pgcache, so both the L1 tier (package coherence,
// which adds table and whole-cache scopes and the LISTEN connection) and a
// backend's own client cache (backends/valkey, which a backend may import
// from below coherence) use the same code.
//
// # The invariant
//
// Keys keeps one sequence. Recording a fence takes the next value and
// raises, to at least that value, the sequence of one of a fixed array of
// key buckets (chosen by hashing the key). A read token is the sequence
// read before the store is read. A value read under token T may be stored,
// or served, while
//
//	bucket(key) <= T
//
// A fence recorded before the token (seq <= T) was for a write that
// completed before the token was taken, so the read that followed saw it;
// a fence recorded after (seq > T) may be for a write the read missed, so
// the value is dropped. Buckets are a fixed array, so memory is bounded
// whatever the key space; two keys sharing a bucket only cost an extra miss.
package fence

import (
	"hash/maphash"
	"sync/atomic"
)

// Token is a read token: the fence sequence when a read began.
type Token uint64

// Keys records fences on keys and answers whether a read token is still
// valid for a key. Its zero value is not ready: call Init.
type Keys struct {
	seq     atomic.Uint64
	buckets []atomic.Uint64
	mask    uint64
	seed    maphash.Seed
}

// Init makes k ready with n key buckets, rounded up to a power of two
// (at least one). Call it once, before any other method.
func (k *Keys) Init(n int) {
	size := 1
	for size < n {
		size <<= 1
	}
	k.buckets = make([]atomic.Uint64, size)
	k.mask = uint64(size - 1)
	k.seed = maphash.MakeSeed()
}

// Token returns a read token. Take it before reading the store.
func (k *Keys) Token() Token { return Token(k.seq.Load()) }

// Hash is a key's bucket hash within scope (a table; "" where there is
// one); compute it once per request.
func (k *Keys) Hash(scope, key string) uint64 {
	if scope == "" {
		// A quarter of the cost of the streaming hash below, for the
		// client cache's writes and fills.
		return maphash.String(k.seed, key)
	}
	var h maphash.Hash
	h.SetSeed(k.seed)
	h.WriteString(scope)
	h.WriteByte(0)
	h.WriteString(key)
	return h.Sum64()
}

// Valid reports whether no fence was recorded for the bucket of the key
// whose Hash is h since tok. One atomic load.
func (k *Keys) Valid(tok Token, h uint64) bool {
	return k.buckets[h&k.mask].Load() <= uint64(tok)
}

// Fence records a fence for the key whose Hash is h and returns its
// sequence.
func (k *Keys) Fence(h uint64) uint64 {
	s := k.seq.Add(1)
	Raise(&k.buckets[h&k.mask], s)
	return s
}

// Next takes a sequence for a fence of a wider scope kept elsewhere (a
// table, everything): the caller raises that scope's sequence to it.
func (k *Keys) Next() uint64 { return k.seq.Add(1) }

// Raise sets a to at least v. Fences may be recorded concurrently, and a
// later (larger) sequence must never be overwritten by an earlier one.
func Raise(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}
