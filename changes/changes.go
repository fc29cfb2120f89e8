// Package changes is the feed of changes to the keys a route.Router
// serves. It fans in the two places a change comes from, keyed by route and
// key:
//
//   - writes through the routes, reported once the backend call has
//     returned (route.Writes; an atomic run's once it has committed), with
//     the client that made them (WithWriter);
//   - the changes each route's backend makes or hears of on its own
//     (backends.Notifier: an L1 tier's fences, a Valkey client cache's
//     invalidations, the memory store's expiries and evictions), followed
//     per route table: subscribed before the table serves, cancelled once
//     it has drained (route.Follower), and a reload that sends keys to
//     another backend reported as a change of everything; and, while
//     someone wants them (Feed.WantExpiries), the keys a
//     backends.ExpiryNotifier deleted as expired (a PostgreSQL kv table's
//     sweeps), once deleted.
//
// The promise. A subscriber is told of a change once this process's reads
// see it: a read that starts after the subscriber was told reads the new
// value. So a consumer that registers its interest in a key before it reads
// the key either reads the change or is told of it. CLIENT TRACKING
// (package tracking) rests on that; so can a client blocked on a key
// (BLPOP): register the wait, read the key, sleep if it is empty; a change
// after the read is told, and wakes it.
package changes

import (
	"context"
	"time"

	"github.com/pgcache/pgcache/route"
)

// SourceReload is the Source of a reload that sent keys to another backend.
const SourceReload = "reload"

// SourceExpiry is the Source of keys deleted because they expired: the
// memory store's reports, and a backends.ExpiryNotifier's (WantExpiries).
const SourceExpiry = "expiry"

// Subscriber is told of every change from Subscribe to its cancel. Its
// methods run on the goroutine that made or heard of the change (the
// writer's, a backend's notifier) and must not block but for a short lock.
type Subscriber interface {
	// Wrote is a write of key, as r's backend stores it (without r's
	// prefix), through r; writer is the client that made it (WithWriter),
	// 0 for none.
	Wrote(r *route.Route, key string, writer int64)
	// Changed is any other change: a backend's report, or a reload.
	Changed(ch Change)
}

// Change is a change a route's backend reported (backends.Outside), or a
// reload.
type Change struct {
	// Route is the route whose backend reported the change; nil for a
	// reload.
	Route *route.Route
	// Keys changed, as Route stores them (without its prefix); nil with
	// All.
	Keys []string
	// All: any key of Route may have changed; for a reload, any key at all.
	All bool
	// Lost: changes of Route may be missed from now until its backend is
	// Watching again; implies All.
	Lost bool
	// Source names where the change came from: the backend's
	// ("postgres", "valkey", "expiry", "eviction"), or SourceReload.
	Source string
	// At is when the change was committed at its source, when known
	// (PostgreSQL's clock for a fence); zero otherwise.
	At time.Time

	routing routing // of the table the change came through: see Covers
}

// Covers reports whether key, as a client spells it, is one of Route's in
// the table the change came through. Any key is a reload's.
func (ch *Change) Covers(key string) bool {
	return ch.Route == nil || ch.routing.of(key) == ch.Route
}

// Reaches reports whether keys under prefix (a client's spelling) may be
// Route's. Any prefix reaches a reload.
func (ch *Change) Reaches(prefix string) bool {
	return ch.Route == nil || reaches(prefix, ch.Route)
}

// writerKey marks a context with the client whose requests it serves.
type writerKey struct{}

// WithWriter returns ctx marked as client id's (an id other than 0): the
// writes made with it are reported with id, so a subscriber can tell a
// client's own writes apart (CLIENT TRACKING's NOLOOP).
func WithWriter(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, writerKey{}, id)
}

// WriterOf is the client WithWriter marked ctx with, or 0.
func WriterOf(ctx context.Context) int64 {
	id, _ := ctx.Value(writerKey{}).(int64)
	return id
}
