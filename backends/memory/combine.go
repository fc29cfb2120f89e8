package memory

import (
	"sync"

	"github.com/pgcache/pgcache/backends"
)

// Writes of one hot key (a queue every worker pushes to, a leaderboard
// every request scores) come from many connections at once. Taking turns
// on the stripe's mutex, each waiter is woken as the write before it ends
// but runs only once the scheduler gets to it, and the key sits unwritten
// meanwhile, for much of the time when each write is long (a sorted set's
// skip list walks). So a collection write that finds its stripe
// held leaves itself with the stripe (left) and waits; whoever holds the
// stripe runs the writes left with it, in the order they came, before it
// lets it go, and wakes their writers, which answer their clients while
// it runs the next. That is flat combining (Hendler, Incze, Shavit and
// Tarir, 2010): one goroutine runs a burst of writes back to back, as
// Redis's one thread does.
//
// Every unlock looks for writes left since (serveLeft), and a writer
// leaves its write before it tries the mutex itself, so a write left is
// always run by a holder that comes after it. One that finds an atomic
// run holding the stripe is handed back (retry), and its writer takes
// the stripe as any write does, waiting for the run no longer than the
// busy threshold.

// leftWrite is a collection write left with a stripe.
type leftWrite struct {
	s        *Store
	k        string
	op       backends.Op
	err      error
	panicked any  // what the write panicked with, for its writer to panic with
	retry    bool // not run: the writer takes the stripe itself
	next     *leftWrite
	done     chan struct{}
}

var leftWrites = sync.Pool{New: func() any { return &leftWrite{done: make(chan struct{}, 1)} }}

// maxServed bounds the writes one holder runs for others in one go, so
// its own client is answered: those left after it are handed back, and
// their writers take the stripe themselves.
const maxServed = 64

// lockOr takes st for op's write of k (false, nil; unlock must follow),
// or, when another holds it, has that holder run the write (true, and
// what the write returned).
func (st *stripe) lockOr(s *Store, k string, op backends.Op) (ran bool, err error) {
	if st.mu.TryLock() {
		if st.seq.Load()&1 == 0 {
			return false, nil
		}
		st.unlock() // an atomic run holds the stripe: lock waits for it
	} else if done, err := st.noneThere(s, k, op); done {
		return true, err
	} else if ran, err := st.leave(s, k, op); ran {
		return true, err
	}
	return false, st.lock()
}

// noneThere runs op's write of k without the stripe when k does not
// exist and op makes nothing of it (a pop or a removal: what the workers
// of a drained queue meet), and reports whether it did: k's absence is
// read as a read reads it, and that is where the write takes effect. One
// that would make k, or met an atomic run, takes the stripe and runs again
// there.
func (st *stripe) noneThere(s *Store, k string, op backends.Op) (done bool, err error) {
	seq := st.seq.Load()
	if seq&1 != 0 {
		return false, nil
	}
	if _, ok := s.get(s.k(k)); ok {
		return false, nil
	}
	c := s.oneCall(op)
	defer c.release()
	err = op.Run(&c.v)
	if c.v.put || st.seq.Load() != seq {
		return false, nil
	}
	return true, err
}

// leave leaves op's write of k with st, held by another, and returns its
// outcome once a holder ran it; ran is false when none could (the writer
// takes the stripe itself).
func (st *stripe) leave(s *Store, k string, op backends.Op) (ran bool, err error) {
	w := leftWrites.Get().(*leftWrite)
	w.s, w.k, w.op = s, k, op
	for {
		w.next = st.left.Load()
		if st.left.CompareAndSwap(w.next, w) {
			break
		}
	}
	st.serveLeft()
	<-w.done
	ran, err, p := !w.retry, w.err, w.panicked
	*w = leftWrite{done: w.done}
	leftWrites.Put(w)
	if p != nil {
		panic(p)
	}
	return ran, err
}

// serveLeft runs the writes left with st while it can take the mutex,
// which it leaves free.
func (st *stripe) serveLeft() {
	served := 0
	for st.left.Load() != nil && st.mu.TryLock() {
		w := reverse(st.left.Swap(nil))
		// A run takes the stripe under the mutex: none can while this
		// holds it.
		run := st.seq.Load()&1 == 0
		for w != nil {
			next := w.next
			if run && served < maxServed {
				w.run()
				served++
			} else {
				w.retry = true
			}
			w.done <- struct{}{}
			w = next
		}
		st.mu.Unlock()
	}
}

// run runs the write, the stripe held, keeping what it returned or
// panicked with for its writer.
func (w *leftWrite) run() {
	defer func() {
		if p := recover(); p != nil {
			w.panicked = p
		}
	}()
	w.err = w.s.write(w.k, w.op)
}

// reverse reverses a list of left writes: left is last in, first out.
func reverse(w *leftWrite) *leftWrite {
	var out *leftWrite
	for w != nil {
		next := w.next
		w.next = out
		out, w = w, next
	}
	return out
}
