package proxy

import (
	"context"
	"sync/atomic"
	"time"
)

// Waves. Redis serves the clients a write unblocked before it runs any
// other command, so once RPUSH list1 has answered, a BLMOVE list1 list2
// that it woke has moved the element, and a BLMOVE list2 list3 that the
// move woke has moved it again. Here each blocked client runs on its own
// goroutine, so the writer waits for them: the turns its write starts
// (blocking.go), and the turns that the woken clients' own writes start,
// are one wave, and the writer is answered once the wave's last turn has
// ended (settle), or after settleWait. A turn started by a write made
// elsewhere (a fence, another instance) is in no wave: no one here waits
// for it.

// settleWait bounds how long a writer waits for the clients it woke: a
// woken client runs one backend call, but a route may be slow to answer.
const settleWait = time.Second

// wave is the turns that a client's write started, directly or through
// the clients it woke.
type wave struct {
	client int64         // the writer
	turns  int           // turns going on
	done   chan struct{} // closed when the last turn ends
}

// waves are the waiters' waves, under waiters.mu but for pending.
type waves struct {
	origin  map[int64]*wave  // by writer, until it settles or the wave ends
	of      map[string]*wave // the wave of each key's turn, if in one
	holding map[int64]*wave  // by client, the wave whose turn its blocked command runs in
	pending atomic.Int64     // len(origin): the writers' check, without the lock
}

func newWaves() waves {
	return waves{origin: map[int64]*wave{}, of: map[string]*wave{}, holding: map[int64]*wave{}}
}

// startLocked puts the turn of key that writer's write is about to start
// in the wave of that write: the wave the writer's blocked command runs
// in, or the writer's own.
func (w *waves) startLocked(key string, writer int64) {
	if writer == 0 {
		return
	}
	wv := w.holding[writer]
	if wv == nil {
		if wv = w.origin[writer]; wv == nil {
			wv = &wave{client: writer, done: make(chan struct{})}
			w.origin[writer] = wv
			w.pending.Add(1)
		}
	}
	wv.turns++
	w.of[key] = wv
}

// holdLocked says that client's blocked command runs in the turn of key.
func (w *waves) holdLocked(key string, client int64) {
	if wv := w.of[key]; wv != nil {
		w.holding[client] = wv
	}
}

// endLocked ends the turn of key in its wave, and the wave with its last
// turn.
func (w *waves) endLocked(key string) {
	wv := w.of[key]
	if wv == nil {
		return
	}
	delete(w.of, key)
	if wv.turns--; wv.turns > 0 {
		return
	}
	close(wv.done)
	w.forgetLocked(wv)
}

func (w *waves) forgetLocked(wv *wave) {
	if w.origin[wv.client] == wv {
		delete(w.origin, wv.client)
		w.pending.Add(-1)
	}
}

// settle waits until the clients that client's writes woke have run, as
// far as settleWait, ctx or stop allow.
func (w *waiters) settle(ctx context.Context, client int64, stop <-chan struct{}) {
	w.mu.Lock()
	wv := w.origin[client]
	w.mu.Unlock()
	if wv == nil {
		return
	}
	t := time.NewTimer(settleWait)
	defer t.Stop()
	select {
	case <-wv.done:
	case <-t.C:
	case <-ctx.Done():
	case <-stop:
	}
	w.mu.Lock()
	w.forgetLocked(wv)
	w.mu.Unlock()
}

// settle answers nothing until the clients this one's writes woke have
// run (waves.go); free when none did.
func (c *conn) settle() {
	if c.s.waiters.pending.Load() != 0 {
		c.s.waiters.settle(c.ctx, c.id, c.s.stopping)
	}
}
