package coherence

import (
	"context"
	"strings"
	"sync"
)

// Refreshing an L1 entry a fence dropped (L1.Refresh).
//
// A fence from another writer (plain SQL, another instance) makes the
// tier's entry for the key unusable, and the next read of it waits for
// PostgreSQL. For a row that is read often that next read is near: every
// CLIENT TRACKING client that held the row is told to drop it, and each
// comes back for it at once, inside a transaction that holds its
// connection's pipeline until PostgreSQL answers. With Refresh on, the tier
// reads such rows again itself, right after the fence, in one backend call
// per batch, so those reads find them in L1.
//
// Only keys L1 holds when their fence arrives are read again: a row nobody
// read since it was last cached is left to its next reader. A refresh is an
// ordinary fill: it takes its read token before it reads, and stores
// nothing if a fence came after the token, so it is exactly as coherent as
// a miss. The queue is bounded (maxRefresh keys); past it keys are left to
// their readers.

// maxRefresh bounds the keys waiting to be refreshed.
const maxRefresh = 4096

// refreshBatch is the most keys one backend call reads.
const refreshBatch = 256

type refresher struct {
	mu      sync.Mutex
	pending []string

	wake   chan struct{}
	cancel func() // the fence watch, then the reads
	done   chan struct{}
}

// startRefresh watches the tier's table's fences and refreshes the keys
// they drop from L1, until stopRefresh.
func (t *Tier) startRefresh() {
	ctx, cancel := context.WithCancel(context.Background())
	r := &refresher{wake: make(chan struct{}, 1), done: make(chan struct{})}
	unwatch := t.f.watch(t.table.Name, func(n fenceNote) { t.queueRefresh(r, n) })
	r.cancel = func() { unwatch(); cancel() }
	t.refresh = r
	go t.refreshLoop(ctx, r)
}

func (t *Tier) stopRefresh() {
	if r := t.refresh; r != nil {
		r.cancel()
		<-r.done
	}
}

// queueRefresh runs on the listener's goroutine, after the fence is
// recorded: it only notes the keys L1 holds.
func (t *Tier) queueRefresh(r *refresher, n fenceNote) {
	if n.all || n.lost || len(n.keys) == 0 {
		return
	}
	r.mu.Lock()
	queued := false
	for _, fk := range n.keys {
		if len(r.pending) >= maxRefresh {
			break
		}
		k, ok := t.routeKey(fk)
		if !ok {
			continue
		}
		if _, held := t.cache.GetEntryQuietly(k); !held {
			continue
		}
		r.pending = append(r.pending, strings.Clone(k))
		queued = true
	}
	r.mu.Unlock()
	if queued {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

func (t *Tier) refreshLoop(ctx context.Context, r *refresher) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		keys := r.pending
		r.pending = nil
		r.mu.Unlock()
		for len(keys) > 0 && ctx.Err() == nil {
			n := min(len(keys), refreshBatch)
			t.refreshKeys(ctx, keys[:n])
			keys = keys[n:]
		}
	}
}

// refreshKeys reads keys in one backend call and fills what no fence has
// touched since the read's token.
func (t *Tier) refreshKeys(ctx context.Context, keys []string) {
	if !t.f.Online() {
		return // a read now could not be cached
	}
	tok := t.f.Token()
	got, err := t.readMany(ctx, keys)
	if err != nil {
		return // the next reader reads it
	}
	t.Stats.Refreshed.Add(int64(len(keys)))
	for i, e := range got {
		if e.Val == nil {
			continue
		}
		if h, err := t.hash(keys[i]); err == nil {
			t.fill(keys[i], e.Val, tok, h, e.TTL)
		}
	}
}
