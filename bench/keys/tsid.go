package keys

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync"
	"time"
)

// TSIDEpoch is the origin of TSID timestamps: 2020-01-01T00:00:00Z, as
// tsid-creator (the library the published comparison used) counts them. 42 bits of
// milliseconds from there last until 2159.
var TSIDEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// TSID layout: 42 bits of milliseconds since TSIDEpoch, then 22 bits that
// keep IDs of one millisecond apart: a node number and a counter.
const (
	tsidRandomBits  = 22
	tsidNodeBits    = 10 // 1024 nodes, tsid-creator's default
	tsidCounterBits = tsidRandomBits - tsidNodeBits
	tsidCounterMax  = 1<<tsidCounterBits - 1
)

// TSIDGen makes time-sorted 64-bit IDs: each is greater than the one before
// it from the same generator, so a bigint primary key fills its B-tree on
// the right edge like a UUIDv7 does. Safe for concurrent use.
type TSIDGen struct {
	mu      sync.Mutex
	node    int64 // random per generator, so two generators rarely collide
	lastMS  int64 // the millisecond of the last ID, possibly ahead of the clock
	counter int64
	now     func() time.Time
}

// NewTSIDGen returns a generator with a random node number.
func NewTSIDGen() *TSIDGen {
	var b [2]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return &TSIDGen{node: int64(binary.BigEndian.Uint16(b[:])) & (1<<tsidNodeBits - 1), now: time.Now}
}

// Next returns the next ID. When more than 4096 IDs are asked for in one
// millisecond, the generator borrows the next millisecond rather than
// repeat or reorder an ID; it catches up with the clock when asked less.
func (g *TSIDGen) Next() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.now().Sub(TSIDEpoch).Milliseconds()
	switch {
	case ms > g.lastMS:
		g.lastMS, g.counter = ms, 0
	case g.counter < tsidCounterMax:
		g.counter++
	default:
		g.lastMS++
		g.counter = 0
	}
	return TSIDAt(g.lastMS, g.node<<tsidCounterBits|g.counter)
}

// TSIDAt builds the TSID of the given milliseconds since TSIDEpoch and
// low bits (masked to 22 bits).
func TSIDAt(msSinceEpoch, low int64) int64 {
	return msSinceEpoch<<tsidRandomBits | low&(1<<tsidRandomBits-1)
}

// TSIDTime returns the time a TSID was made.
func TSIDTime(id int64) time.Time {
	return TSIDEpoch.Add(time.Duration(id>>tsidRandomBits) * time.Millisecond)
}

// FormatTSID writes a TSID as the decimal a bigint column takes.
func FormatTSID(id int64) string { return strconv.FormatInt(id, 10) }
