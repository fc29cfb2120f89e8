package readwrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// readFunc is reader's read of row id, once; it says whether a cache
// answered it.
type readFunc func(ctx context.Context, reader int, id int64) (hit bool, err error)

// writeFunc changes row id.
type writeFunc func(ctx context.Context, id int64) error

// loadResult is what one reads-while-writing run measured.
type loadResult struct {
	reads, hits, readErrs int64
	updates, writeErrs    int64
	elapsed               time.Duration
	latency               *hdrhistogram.Histogram // microseconds
	sched                 *SchedLatency           // the load generator's own, see sched.go
	firstErr              error
}

// runOver reports whether the run has ended, for a call that returned
// err: ctx is done, or err is a timeout at or past ctx's deadline, which a
// driver can report before ctx says it is done (pgx times a query out by
// the connection's own deadline, set to ctx's).
func runOver(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(d)
}

// runLoad runs readers and writers for d: readers as fast as they can,
// writers at rate UPDATEs per second in all (0: as fast as they can). Both
// loops are bounded by d and by a count.
func runLoad(ctx context.Context, o *Options, read readFunc, write writeFunc, progress io.Writer, label string) *loadResult {
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	res := &loadResult{latency: hdrhistogram.New(1, 60_000_000, 3)}
	var mu sync.Mutex
	var errOnce sync.Once
	noteErr := func(err error) { errOnce.Do(func() { res.firstErr = err }) }
	var readErrs, updates, writeErrs atomic.Int64
	// Each reader counts in a line of its own: a count shared by all would
	// cost every read a cache line passed between the cores, a noticeable
	// part of a read served from the app's own memory.
	counts := make([]readerCount, o.Readers)
	schedBefore := sampleSched()
	start := time.Now()
	var wg sync.WaitGroup
	for r := range o.Readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), uint64(start.UnixNano())))
			h := hdrhistogram.New(1, 60_000_000, 3)
			for n := 0; n < maxOps && ctx.Err() == nil; n++ {
				id := 1 + rng.Int64N(int64(o.Rows))
				t0 := time.Now()
				hit, err := read(ctx, r, id)
				if runOver(ctx, err) {
					break
				}
				if err != nil {
					readErrs.Add(1)
					noteErr(fmt.Errorf("read: %w", err))
					continue
				}
				h.RecordValue(max(time.Since(t0).Microseconds(), 1))
				counts[r].reads.Add(1)
				if hit {
					counts[r].hits.Add(1)
				}
				if n%yieldEvery == yieldEvery-1 {
					runtime.Gosched()
				}
			}
			mu.Lock()
			res.latency.Merge(h)
			mu.Unlock()
		})
	}
	if write != nil {
		for w := range o.Writers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w)+1000, uint64(start.UnixNano())))
				// Each writer takes an even share of the rate, paced by a
				// schedule so that a slow UPDATE is caught up, not lost.
				var every time.Duration
				if o.UpdateRate > 0 {
					every = time.Duration(float64(time.Second) * float64(o.Writers) / float64(o.UpdateRate))
				}
				next := start
				for n := 0; n < maxOps && ctx.Err() == nil; n++ {
					if every > 0 {
						next = next.Add(every)
						if d := time.Until(next); d > 0 {
							select {
							case <-ctx.Done():
							case <-time.After(d):
							}
						}
					}
					if err := write(ctx, 1+rng.Int64N(int64(o.Rows))); err != nil {
						if !runOver(ctx, err) {
							writeErrs.Add(1)
							noteErr(fmt.Errorf("write: %w", err))
						}
						continue
					}
					updates.Add(1)
				}
			})
		}
	}
	reads := func() (n int64) {
		for i := range counts {
			n += counts[i].reads.Load()
		}
		return n
	}
	stop := watch(progress, label, o.Duration, start, reads, &updates)
	wg.Wait()
	stop()
	res.elapsed = time.Since(start)
	res.sched = sampleSched().since(schedBefore)
	for i := range counts {
		res.reads += counts[i].reads.Load()
		res.hits += counts[i].hits.Load()
	}
	res.readErrs = readErrs.Load()
	res.updates, res.writeErrs = updates.Load(), writeErrs.Load()
	return res
}

// readerCount is one reader's counts, on a cache line of its own.
type readerCount struct {
	reads, hits atomic.Int64
	_           [48]byte
}

// yieldEvery is how many reads a reader makes before it lets the other
// goroutines run, as a request handler does between requests. Readers
// served from the app's own memory (pgcache-csc) never block: without it
// each keeps a P for a whole time slice, and the goroutines that wait on
// the network (the writers, valkey-go's connection readers) wait behind
// them, so the writers fell far behind their rate for the run's first
// seconds and then caught up in a burst (docs/performance.md).
const yieldEvery = 32

// maxOps bounds every load loop by count as well as by time.
const maxOps = 1 << 30

// watch prints a progress line a second until stopped.
func watch(w io.Writer, label string, total time.Duration, start time.Time, reads func() int64, updates *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastR, lastU int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r, u := reads(), updates.Load()
				fmt.Fprintf(w, "  %-20s %5.0fs/%.0fs  reads/s %8d  updates/s %7d\n", label,
					time.Since(start).Seconds(), total.Seconds(), r-lastR, u-lastU)
				lastR, lastU = r, u
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// warm reads every row once, the rows split between the readers, so that
// the measured run starts with warm caches (and warm PostgreSQL buffers for
// the stack without one).
func warm(ctx context.Context, o *Options, read readFunc) error {
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for r := range o.Readers {
		wg.Go(func() {
			for id := int64(1 + r); id <= int64(o.Rows) && ctx.Err() == nil; id += int64(o.Readers) {
				if _, err := read(ctx, r, id); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("warmup: %w", err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
