package faults

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load drives a RESP address with writers and readers until stopped, and
// keeps what a fault case is judged by: every write acknowledged with +OK,
// and when requests failed.
//
// Writers SET keys no one else writes ({prefix}w{worker}:{seq}), each with
// a value of its own, so "every acknowledged write is in the store with its
// value" is a plain lookup afterwards. Readers GET keys seeded before the
// load ({prefix}r{n}) that nothing changes, so any other answer is wrong.
// Each request is one attempt on a connection of the worker's own; after a
// broken connection the worker dials again.
type load struct {
	addr    string
	prefix  string
	started time.Time
	stop    chan struct{}
	wg      sync.WaitGroup

	ok     atomic.Int64 // requests answered as they should be
	failed atomic.Int64 // requests answered with an error, or not at all
	wrong  atomic.Int64 // reads answered with something else than the seeded value

	mu                  sync.Mutex
	acked               map[string]string    // every SET answered +OK: key → value
	ackedAt             map[string]time.Time // and when the +OK came
	errTexts            map[string]int       // failures by error text (trimmed)
	okByTick            []int                // successes by the tick of their end
	badByTick           []int                // failures by the tick of their start
	firstFail, lastFail time.Time            // when the first and the last failure came
}

const (
	tick     = 10 * time.Millisecond // the resolution of the load's timeline
	readKeys = 64
)

// loadOptions shape a load.
type loadOptions struct {
	prefix  string // the route's key prefix
	writers int
	readers int
}

// startLoad seeds the readers' keys and starts the workers.
func startLoad(t testing.TB, addr string, o loadOptions) *load {
	t.Helper()
	l := &load{
		addr:     addr,
		prefix:   o.prefix,
		stop:     make(chan struct{}),
		acked:    map[string]string{},
		ackedAt:  map[string]time.Time{},
		errTexts: map[string]int{},
	}
	if o.readers > 0 {
		c := dialRESP(t, addr)
		for n := range readKeys {
			if _, err := c.Do("SET", l.readKey(n), l.readValue(n)); err != nil {
				t.Fatalf("seed: %v", err)
			}
		}
		c.Close()
	}
	l.started = time.Now()
	for w := range o.writers {
		l.wg.Go(func() { l.work(func(c *respConn, seq int) error { return l.write(c, w, seq) }) })
	}
	for r := range o.readers {
		l.wg.Go(func() { l.work(func(c *respConn, seq int) error { return l.read(c, (r*7+seq)%readKeys) }) })
	}
	t.Cleanup(l.Stop)
	return l
}

func (l *load) readKey(n int) string   { return fmt.Sprintf("%sr%d", l.prefix, n) }
func (l *load) readValue(n int) string { return fmt.Sprintf("seeded-%d", n) }

// work runs one worker's requests until Stop.
func (l *load) work(do func(c *respConn, seq int) error) {
	var c *respConn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		default:
		}
		start := time.Now()
		var err error
		if c == nil {
			c, err = dialRESPTimeout(l.addr, 5*time.Second)
		}
		if err == nil {
			err = do(c, seq)
		}
		end := time.Now()
		if err == nil {
			l.ok.Add(1)
			l.mark(&l.okByTick, end)
			continue
		}
		l.fail(start, end, err)
		if c != nil && !errors.As(err, new(errReply)) && !errors.Is(err, errWrongValue) {
			c.Close() // broken, or in an unknown state: start afresh
			c = nil
		}
		// Failing fast must not become a busy loop.
		select {
		case <-l.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

var errWrongValue = errors.New("read returned a value that was never written")

func (l *load) write(c *respConn, w, seq int) error {
	key := fmt.Sprintf("%sw%d:%d", l.prefix, w, seq)
	val := fmt.Sprintf("v%d:%d:%d", w, seq, time.Now().UnixNano())
	reply, err := c.Do("SET", key, val)
	if err != nil {
		return err
	}
	if reply != "OK" {
		return fmt.Errorf("SET answered %q", reply)
	}
	now := time.Now()
	l.mu.Lock()
	l.acked[key] = val
	l.ackedAt[key] = now
	l.mu.Unlock()
	return nil
}

func (l *load) read(c *respConn, n int) error {
	v, err := c.Do("GET", l.readKey(n))
	if err != nil {
		return err
	}
	if v != l.readValue(n) {
		l.wrong.Add(1)
		return fmt.Errorf("%w: GET %s = %q", errWrongValue, l.readKey(n), v)
	}
	return nil
}

func (l *load) mark(ticks *[]int, at time.Time) {
	i := int(at.Sub(l.started) / tick)
	if i < 0 {
		i = 0
	}
	l.mu.Lock()
	for len(*ticks) <= i {
		*ticks = append(*ticks, 0)
	}
	(*ticks)[i]++
	l.mu.Unlock()
}

func (l *load) fail(start, end time.Time, err error) {
	l.failed.Add(1)
	l.mark(&l.badByTick, start)
	text := err.Error()
	if len(text) > 120 {
		text = text[:120] + "…"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstFail.IsZero() || end.Before(l.firstFail) {
		l.firstFail = end
	}
	if end.After(l.lastFail) {
		l.lastFail = end
	}
	if _, ok := l.errTexts[text]; ok || len(l.errTexts) < 50 {
		l.errTexts[text]++
	}
}

// Stop stops the workers and waits for them; it may be called again.
func (l *load) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// waitOK waits, bounded, until n more requests have succeeded.
func (l *load) waitOK(t testing.TB, n int64, bound time.Duration) {
	t.Helper()
	target := l.ok.Load() + n
	eventually(t, bound, fmt.Sprintf("%d requests succeed", n), func() bool { return l.ok.Load() >= target })
}

// waitFailed waits, bounded, until n more requests have failed.
func (l *load) waitFailed(t testing.TB, n int64, bound time.Duration) {
	t.Helper()
	target := l.failed.Load() + n
	eventually(t, bound, fmt.Sprintf("%d requests fail", n), func() bool { return l.failed.Load() >= target })
}

// firstOKAfter is when the first request after at succeeded (to the tick),
// or the zero time.
func (l *load) firstOKAfter(at time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := max(int(at.Sub(l.started)/tick)+1, 0); i < len(l.okByTick); i++ {
		if l.okByTick[i] > 0 {
			return l.started.Add(time.Duration(i) * tick)
		}
	}
	return time.Time{}
}

// failedBetween counts the failures of requests sent in [from, to), to
// the tick (from the first whole tick after from).
func (l *load) failedBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	lo, hi := int(from.Sub(l.started)/tick)+1, int(to.Sub(l.started)/tick)
	for i := max(lo, 0); i <= min(hi, len(l.badByTick)-1); i++ {
		n += l.badByTick[i]
	}
	return n
}

// failureSpan is when the first failed request failed and when the last
// one did: a request in flight when a fault struck fails after it.
func (l *load) failureSpan() (first, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstFail, l.lastFail
}

// errorSummary lists the failures by text, most frequent first.
func (l *load) errorSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for text, n := range l.errTexts {
		lines = append(lines, fmt.Sprintf("%6d %s", n, text))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	if len(lines) > 8 {
		lines = append(lines[:8], fmt.Sprintf("… %d more kinds", len(lines)-8))
	}
	return strings.Join(lines, "\n")
}

// ackedWrites returns a copy of every acknowledged write.
func (l *load) ackedWrites() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		m[k] = v
	}
	return m
}

// ackedBefore splits keys by whether their write was acknowledged before at.
func (l *load) ackedBefore(keys []string, at time.Time) (before, after int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if l.ackedAt[k].Before(at) {
			before++
		} else {
			after++
		}
	}
	return before, after
}

// lostWrites compares the acknowledged writes with what the store holds
// (stored: key as the load wrote it → value, for the keys asked), and
// returns the keys whose acknowledged value is missing or different.
func lostWrites(acked, stored map[string]string) []string {
	var lost []string
	for k, v := range acked {
		if stored[k] != v {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}
