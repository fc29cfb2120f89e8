// Package cursor keeps the positions of keyspace scans under way, each under
// the number a SCAN reply hands the client.
//
// A SCAN cursor is a decimal number, and the client holds nothing else. A
// store whose position cannot be written as a small number (a live
// iterator over otter's table, the last key of a PostgreSQL page) keeps it
// here and gives the client its id. The table is bounded: past Max
// positions the least recently used one is dropped, and so is one unused
// for Idle. A client that comes back with a dropped (or made-up) cursor
// has its scan start over: it sees keys twice, but every key present for
// the whole scan still comes back, which is SCAN's promise.
package cursor

import (
	"container/list"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults of New's bounds.
const (
	DefaultMax  = 1024
	DefaultIdle = 10 * time.Minute
)

// Table maps ids to positions. Its zero value is not usable: call New.
type Table[P any] struct {
	lo, span uint64 // ids are in [lo, lo+span)
	max      int
	idle     time.Duration
	drop     func(P) // releases a position the table gives up

	mu  sync.Mutex
	m   map[uint64]*list.Element
	lru list.List // of *entry[P], most recent first
}

type entry[P any] struct {
	id   uint64
	p    P
	used time.Time
}

// New returns a table handing out ids in [lo, hi) (lo > 0: 0 is the cursor
// of a scan's start and end), keeping at most max positions (DefaultMax
// when 0) idle at most idle (DefaultIdle when 0). drop, when not nil,
// releases a position the table gives up.
func New[P any](lo, hi uint64, max int, idle time.Duration, drop func(P)) *Table[P] {
	if lo == 0 || hi <= lo {
		panic("cursor: bad id range")
	}
	if max <= 0 {
		max = DefaultMax
	}
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Table[P]{lo: lo, span: hi - lo, max: max, idle: idle, drop: drop, m: map[uint64]*list.Element{}}
}

// Put keeps p and returns its id.
func (t *Table[P]) Put(p P) uint64 {
	now := time.Now()
	var dropped []P
	t.mu.Lock()
	for t.lru.Len() > 0 {
		last := t.lru.Back().Value.(*entry[P])
		if t.lru.Len() < t.max && uint64(t.lru.Len()) < t.span && now.Sub(last.used) < t.idle {
			break
		}
		t.lru.Remove(t.lru.Back())
		delete(t.m, last.id)
		dropped = append(dropped, last.p)
	}
	id := t.lo + rand.Uint64N(t.span)
	for t.m[id] != nil {
		id = t.lo + rand.Uint64N(t.span)
	}
	t.m[id] = t.lru.PushFront(&entry[P]{id: id, p: p, used: now})
	t.mu.Unlock()
	t.release(dropped)
	return id
}

// Take removes the position under id and returns it; ok is false when
// there is none (never issued, already taken, or dropped). The caller owns
// it: it Puts it back under a new id, or releases it.
func (t *Table[P]) Take(id uint64) (p P, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := t.m[id]
	if el == nil {
		return p, false
	}
	t.lru.Remove(el)
	delete(t.m, id)
	return el.Value.(*entry[P]).p, true
}

// Len is how many positions the table keeps.
func (t *Table[P]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}

// Close releases every position.
func (t *Table[P]) Close() {
	t.mu.Lock()
	var dropped []P
	for el := t.lru.Front(); el != nil; el = el.Next() {
		dropped = append(dropped, el.Value.(*entry[P]).p)
	}
	t.lru.Init()
	clear(t.m)
	t.mu.Unlock()
	t.release(dropped)
}

func (t *Table[P]) release(ps []P) {
	if t.drop == nil {
		return
	}
	for _, p := range ps {
		t.drop(p)
	}
}
