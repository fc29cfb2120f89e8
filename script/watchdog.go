package script

import (
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// watchdogTick is how often the watchdog looks at running scripts.
const watchdogTick = 10 * time.Millisecond

// watchdog is one goroutine that runs while scripts run: it logs Redis's
// slow-script warning once a run passes the busy threshold, and enforces
// the memory limit.
//
// The memory limit. gopher-lua allocates from the Go heap and has no
// allocator hook, so a script's own memory cannot be counted. What can be
// read cheaply, without stopping the world, is the live heap as of the
// last garbage collection (runtime/metrics /gc/heap/live:bytes). A run
// records it when it starts; a script that keeps growing memory makes the
// collector run, and once the live heap has grown by more than the limit
// since the oldest run started, that run is stopped at its next Lua
// instruction with "ERR not enough memory" (Lua's out-of-memory text) and
// its Lua state is thrown away. It bounds what one script can retain to
// about the limit plus one GC cycle's growth. It cannot tell whose memory
// grew: a cache filling up while a long script runs counts against the
// script. Stacks are bounded separately (callStackSize, regMax).
type watchdog struct {
	e      *Engine
	mu     sync.Mutex
	active bool
	sample []metrics.Sample
	// live is the live heap as the watchdog last read it: a run starts
	// from it rather than reading the runtime's metrics itself, which cost
	// a short script a good part of its time.
	live atomic.Uint64
}

func (w *watchdog) init(e *Engine) {
	w.e = e
	w.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
}

// liveHeap reads the live heap of the last GC.
func (w *watchdog) liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// startHeap is the live heap a run starts from: the watchdog's last
// reading, or a reading now when there is none yet.
func (w *watchdog) startHeap() uint64 {
	if v := w.live.Load(); v != 0 {
		return v
	}
	v := w.liveHeap()
	w.live.Store(v)
	return v
}

// wake starts the watchdog if it is not running.
func (w *watchdog) wake() {
	w.mu.Lock()
	if w.active {
		w.mu.Unlock()
		return
	}
	w.active = true
	w.mu.Unlock()
	go w.loop()
}

func (w *watchdog) loop() {
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	for range t.C {
		if !w.check() {
			w.mu.Lock()
			// A run that began after check saw none has called wake,
			// which found active still true; look again before leaving.
			if w.e.runningCount() == 0 {
				w.active = false
				w.live.Store(0) // stale once nobody reads it: the next run reads afresh
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
		}
	}
}

func (e *Engine) runningCount() int {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	return len(e.running)
}

// check looks at the runs once; it reports whether any is running.
func (w *watchdog) check() bool {
	e := w.e
	thr := e.BusyThreshold()
	limit := e.memLimit.Load()
	var live uint64
	if limit > 0 {
		live = w.liveHeap()
		w.live.Store(live)
	}
	now := time.Now()
	var oldest *Run
	type slowRun struct {
		function bool
		ran      time.Duration
	}
	var slow []slowRun
	var stopped string // the name of the run the memory limit stopped
	// Runs are halted here, under rmu, while they are surely running: a
	// Run is reused by its Lua state once it ends (see halt). What is
	// logged is copied out for the same reason.
	e.rmu.Lock()
	n := len(e.running)
	for r := range e.running {
		if r.client != nil && r.client.Err() != nil {
			r.halt(errClientGone)
		}
		if thr > 0 && !r.warned && now.Sub(r.Start) >= thr {
			r.warned = true
			slow = append(slow, slowRun{r.Function, now.Sub(r.Start)})
		}
		if limit > 0 && live > r.heap+uint64(limit) && (oldest == nil || r.Start.Before(oldest.Start)) {
			oldest = r
		}
	}
	if oldest != nil {
		stopped = oldest.Name
		oldest.halt(errOutOfMemory)
	}
	e.rmu.Unlock()
	for _, r := range slow {
		cmd := "SCRIPT KILL"
		if r.function {
			cmd = "FUNCTION KILL"
		}
		e.logf(LogWarning, "Slow script detected: still in execution after "+
			strconv.FormatInt(r.ran.Milliseconds(), 10)+
			" milliseconds. You can try killing the script using the "+cmd+" command.")
	}
	if oldest != nil {
		e.logf(LogWarning, "Script "+stopped+" stopped: the live heap grew past the script memory limit")
	}
	return n > 0
}
