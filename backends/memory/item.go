package memory

import "unsafe"

// item is a stored value and its deadline, in one allocation that holds no
// pointers: the header, then the value's bytes. The cache stores *item,
// which otter keeps in its node as one pointer.
//
// The obvious struct{val []byte; exp int64} cost a SET three allocations:
// the value's copy, the key's, and the box otter puts a value in when it
// is bigger than a pointer. It was also a pointer the collector had to
// follow and a cache miss on every read (node, box, bytes). As one
// allocation without pointers it is two allocations, one object the
// collector never scans, and a read goes from the node to the bytes.
//
// An item is never changed once made: writers make a new one, so a value a
// read returned stays as it was.
type item struct {
	exp int64 // unix nanoseconds, 0 for none
	n   int   // length of the value, which follows the header
}

const headSize = int(unsafe.Sizeof(item{}))

// newItem copies val into a new item.
func newItem(val []byte, exp int64) *item {
	// A []byte of at least 16 bytes is never from the tiny allocator, so
	// it is aligned for the header's int64s (every size class is a
	// multiple of 8).
	buf := make([]byte, headSize+len(val))
	it := (*item)(unsafe.Pointer(&buf[0]))
	it.exp, it.n = exp, len(val)
	copy(buf[headSize:], val)
	return it
}

// empty is the value of an item with none: present, not nil.
var empty = []byte{}

// val is the item's value. The caller must not change it.
func (it *item) val() []byte {
	if it.n == 0 {
		return empty
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(it), headSize)), it.n)
}

func (it *item) live(now int64) bool { return it.exp == 0 || it.exp > now }

// alive is live against the clock, read only for an item with a deadline:
// on a VM whose clock source is kvm-clock a read of the clock is a large
// part of a GET (docs/performance.md).
func (it *item) alive() bool { return it.exp == 0 || it.exp > now() }
