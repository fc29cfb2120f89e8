package coll

import (
	"math/rand/v2"

	"github.com/pgcache/pgcache/backends"
)

// Hash is a Redis hash: fields and their values. Fields are held in a
// dense slice with a map from field to position, so a lookup is O(1), and
// so is a field picked at random (HRANDFIELD), uniformly. The slice is in
// the order Redis answers HGETALL in while the hash is small (a listpack:
// insertion order); a removal from a larger one moves the last field into
// the hole (see Del).
type Hash struct {
	idx    map[string]int32
	fields []string
	vals   [][]byte
	weight int64
	// The largest the hash ever was, for OBJECT ENCODING (Limits).
	maxLen, maxElem int
	j               *Journal
}

// perEntry is what a member costs beyond its bytes: its slots in the
// slices and the map.
const perEntry = 64

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{idx: make(map[string]int32)} }

func (h *Hash) Type() backends.Type { return backends.TypeHash }
func (h *Hash) Len() int            { return len(h.fields) }
func (h *Hash) Weight() int64       { return h.weight }

// Clone copies the hash; field and value bytes are shared (they never change).
func (h *Hash) Clone() backends.Value {
	c := &Hash{idx: make(map[string]int32, len(h.fields)), fields: append([]string(nil), h.fields...),
		vals: append([][]byte(nil), h.vals...), weight: h.weight, maxLen: h.maxLen, maxElem: h.maxElem}
	for i, f := range c.fields {
		c.idx[f] = int32(i)
	}
	return c
}

// Journal makes the hash record the fields each change touches in j (nil:
// stop recording).
func (h *Hash) Journal(j *Journal) { h.j = j }

// Get returns the value of field f.
func (h *Hash) Get(f string) ([]byte, bool) {
	i, ok := h.idx[f]
	if !ok {
		return nil, false
	}
	return h.vals[i], true
}

// Set sets field f to v and reports whether f is new. v is kept (the
// caller must not change it), and so is f when it is new: a caller that
// borrows f's bytes passes Key's string instead.
func (h *Hash) Set(f string, v []byte) (added bool) {
	h.maxElem = max(h.maxElem, len(f), len(v))
	if i, ok := h.idx[f]; ok {
		h.j.touch(h.fields[i])
		h.weight += int64(len(v) - len(h.vals[i]))
		h.vals[i] = v
		return false
	}
	h.j.touch(f)
	h.idx[f] = int32(len(h.fields))
	h.fields = append(h.fields, f)
	h.vals = append(h.vals, v)
	h.weight += int64(len(f)+len(v)) + perEntry
	h.maxLen = max(h.maxLen, len(h.fields))
	return true
}

// Key returns the hash's own string for field f when it has one, and a
// copy of f otherwise: what Set may keep.
func (h *Hash) Key(f []byte) string {
	if i, ok := h.idx[stringOf(f)]; ok {
		return h.fields[i]
	}
	return string(f)
}

// Del removes field f and reports whether it was there. A hash that is
// still a listpack to Redis (Encoding under l; nil is DefaultLimits) keeps
// its order, as a listpack does, so HGETALL answers a small hash in the
// order Redis does: the later fields move down, O(N) for N at most
// hash-max-listpack-entries, as Redis's own delete is. A larger hash moves
// its last field into the hole, O(1); its order is a hash table's to
// Redis, which no client can count on.
func (h *Hash) Del(f string, l *Limits) bool {
	i, ok := h.idx[f]
	if !ok {
		return false
	}
	h.j.touch(h.fields[i]) // f may be borrowed
	h.weight -= int64(len(f)+len(h.vals[i])) + perEntry
	last := len(h.fields) - 1
	switch {
	case int(i) == last:
	case h.small(l):
		copy(h.fields[i:], h.fields[i+1:])
		copy(h.vals[i:], h.vals[i+1:])
		for k := int(i); k < last; k++ {
			h.idx[h.fields[k]] = int32(k)
		}
	default:
		h.fields[i], h.vals[i] = h.fields[last], h.vals[last]
		h.idx[h.fields[i]] = i
	}
	h.fields[last], h.vals[last] = "", nil
	h.fields, h.vals = h.fields[:last], h.vals[:last]
	delete(h.idx, f)
	return true
}

// At returns the i-th field and its value, 0 <= i < Len(), in the hash's
// own order (which a removal changes).
func (h *Hash) At(i int) (string, []byte) { return h.fields[i], h.vals[i] }

// Random returns a field and value picked uniformly at random; the hash
// must not be empty.
func (h *Hash) Random() (string, []byte) {
	i := rand.IntN(len(h.fields))
	return h.fields[i], h.vals[i]
}

// Encoding is what OBJECT ENCODING reports: listpack while the hash has
// never had more fields, or a longer field or value, than l allows.
func (h *Hash) Encoding(l *Limits) string { return either(h.small(l), "listpack", "hashtable") }

// small reports whether the hash is a listpack to Redis under l (nil:
// DefaultLimits): returned whole by HSCAN, kept in insertion order.
func (h *Hash) small(l *Limits) bool {
	if l == nil {
		l = &DefaultLimits
	}
	return int64(h.maxLen) <= l.HashMaxListpackEntries && int64(h.maxElem) <= l.HashMaxListpackValue
}

var _ backends.Value = (*Hash)(nil)
