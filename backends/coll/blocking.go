package coll

import (
	"errors"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// The blocking commands (BLPOP, BLMOVE, BLMPOP, BZPOPMIN, BZMPOP…), each a
// Blocker made of its non-blocking form: Run is that form's attempt over
// the keys in order, Ready says whether it popped. When it did not, Reply
// is what Redis answers where it may not block (MULTI, a script), and
// TimedOut what it answers when the timeout passes: a nil array for all of
// them, BLMOVE and BRPOPLPUSH included (Redis 7.0's
// replyToBlockedClientTimedOut), though their non-blocking miss is a nil
// bulk.
//
// Redis serves a woken client only from a key that holds the command's
// type: a key that came to hold a string while it waited is passed over,
// not an error. The waiter says so by calling Wake before each Run after
// the first (the Waker interface); a first Run (and a retry of it) still
// fails with WRONGTYPE, as Redis does before it blocks.

// Blocker is a Command that may wait for its keys (BLPOP, BZPOPMIN,
// BLMOVE…): Run does what its non-blocking form does, and Ready reports
// whether that did anything. When it did not, the RESP front waits until
// one of the keys changes, or Timeout passes (0: forever), and runs it
// again; once Timeout has passed it answers TimedOut instead of Reply.
// Inside MULTI or a script a Blocker never waits: it answers at once.
type Blocker interface {
	Command
	Ready() bool
	Timeout() time.Duration
	TimedOut(w Writer)
}

// Waker is a Blocker that runs differently once woken.
type Waker interface {
	Wake()
}

// wait is what a blocking command adds to the Op of its non-blocking
// form, which embeds it (LMove, LMPop, ZMPop): its timeout, its answer
// when the timeout passes, and whether it was woken. The non-blocking
// form is never woken.
type wait struct {
	timeout time.Duration
	// Woken: Wake was called; a key of another type is passed over.
	Woken bool
}

func (w *wait) Timeout() time.Duration { return w.timeout }
func (*wait) TimedOut(w Writer)        { w.NullArray() }
func (w *wait) Wake()                  { w.Woken = true }

// firstHeld returns the first of the command's n keys that holds a value
// of type t, and its index; nil when none does. A key of another type
// before it fails the command, unless the command was woken.
func (w *wait) firstHeld(v backends.View, n int, t backends.Type) (backends.Value, int, error) {
	for i := range n {
		val, err := v.Get(i, t)
		if w.Woken && errors.Is(err, backends.ErrWrongType) {
			continue
		}
		if val != nil || err != nil {
			return val, i, err
		}
	}
	return nil, 0, nil
}
