package tracking

import "github.com/pgcache/pgcache/backends"

// Conn is a tracking client's connection as the tracker sees it. Its
// pushes queue an invalidation for the client (on its own connection or on
// the one it redirects to, in the encoding its protocol asks: the front's
// business) and report whether one was queued. The tracker calls them one
// at a time, under its lock: they must not block, nor call the tracker.
type Conn interface {
	// ID is the client's id (CLIENT ID), never reused.
	ID() int64
	// PushKeys queues an invalidation of keys (the client's spelling).
	PushKeys(keys []string) bool
	// PushAll queues an invalidation of every key the client has.
	PushAll() bool
}

// Options are CLIENT TRACKING ON's, checked by the caller (the mode
// switches and prefix overlaps Redis refuses).
type Options struct {
	BCAST  bool // every key under Prefixes, read or not
	OptIn  bool // only reads after CLIENT CACHING YES
	OptOut bool // not reads after CLIENT CACHING NO
	NoLoop bool // not the client's own writes
	// Prefixes are BCAST's: On adds them to those the client has; none is
	// every key ("").
	Prefixes []string
}

// Client is one connection's tracking, from On to Off. The connection's
// goroutine alone calls the tracker with it, and reads its Options without
// a lock: they change only on that goroutine, under the tracker's lock.
type Client struct {
	conn Conn
	id   int64
	opts Options

	// Read's and Served's scratch, reused from read to read.
	seen, unseen [][]byte
	watched      []watchedKey
	unsure       []unsureRead // reads a backend may serve unwatched
}

// Options returns the client's options, with every prefix it has. Its
// Prefixes are the client's: the caller does not change them.
func (cl *Client) Options() Options { return cl.opts }

// Sees reports whether the tracker must see a read of the client (Read):
// one it caches, or any read of a BCAST client, which caches them all.
// caching is CLIENT CACHING's word for the read (YES under OPTIN, NO under
// OPTOUT).
func (cl *Client) Sees(caching bool) bool { return cl.opts.BCAST || cl.remembers(caching) }

// remembers reports whether the client's read is registered in the table:
// default mode, not opted out of by OPTIN or OPTOUT.
func (cl *Client) remembers(caching bool) bool {
	o := &cl.opts
	return !o.BCAST && !(o.OptIn && !caching) && !(o.OptOut && caching)
}

// On turns tracking on for c with o (already checked), adding o's prefixes
// to those c has, and returns c's tracking: the same Client while it stays
// on.
func (t *Tracker) On(c Conn, o Options) *Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	add := o.Prefixes
	cl := t.clients[c.ID()]
	if cl == nil {
		cl = &Client{id: c.ID()}
		t.clients[cl.id] = cl
		t.on.Add(1)
		t.feed.WantWrites(1)
		o.Prefixes = nil
	} else {
		o.Prefixes = cl.opts.Prefixes
	}
	cl.conn = c
	if o.BCAST {
		if len(add) == 0 {
			add = []string{""}
		}
		for _, p := range add {
			cs := t.prefixes[p]
			if cs == nil {
				cs = map[*Client]struct{}{}
				t.prefixes[p] = cs
			}
			if _, ok := cs[cl]; !ok {
				cs[cl] = struct{}{}
				o.Prefixes = append(o.Prefixes, p)
			}
		}
	}
	cl.opts = o
	return cl
}

// Off turns tracking off for cl (nil: it was off). Its id stays in the
// table until the keys are written or evicted, as in Redis: ids are never
// reused.
func (t *Tracker) Off(cl *Client) {
	if cl == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients[cl.id] != cl {
		return
	}
	for _, p := range cl.opts.Prefixes {
		if cs := t.prefixes[p]; cs != nil {
			delete(cs, cl)
			if len(cs) == 0 {
				delete(t.prefixes, p)
				if ks := t.pending[p]; ks != nil {
					t.npending -= len(ks)
					delete(t.pending, p)
				}
			}
		}
	}
	delete(t.clients, cl.id)
	t.on.Add(-1)
	t.feed.WantWrites(-1)
	clear(cl.unsure)
	cl.unsure = cl.unsure[:0]
}

// watchedKey is a key a Notifier reports the changes of, while Watching.
type watchedKey struct {
	key []byte
	n   backends.Notifier
}

// unsureRead is a read of a backend that may serve it unwatched: key as
// the client spells it and as the route stores it, and the token taken
// before the read.
type unsureRead struct {
	key    []byte
	stored string
	u      backends.UnwatchedReads
	tok    uint64
}
