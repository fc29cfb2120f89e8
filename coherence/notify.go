package coherence

import (
	"time"

	"github.com/pgcache/pgcache/backends"
)

// What a tier tells CLIENT TRACKING (backends.Notifier): every fence the
// listener receives for its table, as the keys the route stores, and the
// fences going offline.
//
// The order argument. The listener records a fence in the Fences and only
// then calls the watchers of its table, on its own goroutine. So when fn
// runs, every read token taken from then on is newer than the fence, and
// every token taken before is refused for the key (fill and hit check
// Valid): a read that starts after fn returned reads PostgreSQL after the
// write, and a read that began before it is never cached, and is followed
// by fn's report. The same for a table or whole-cache fence, and for going
// offline: the Fences are marked offline (no tier serves or fills) before
// watchers hear of Lost.
//
// What is not reported: the fences a tier records locally for its own
// writes (invalidate, Flush), which the route reports itself. The trigger's
// NOTIFY of such a write does come back through the listener, and is
// reported then as well: a second invalidation, never a missing one.

// fenceNote is one report to a table's watchers: fence keys of the table
// (as logged: fence.KeyOf's text), or all of it, or everything lost.
type fenceNote struct {
	keys []string
	all  bool
	lost bool
	at   time.Time
}

// watcher is a tier listening to its table's fences.
type watcher struct {
	table string
	fn    func(fenceNote)
}

// watch calls fn with each fence of table the listener records from now on,
// and with every whole-cache fence, until cancel.
func (f *Fences) watch(table string, fn func(fenceNote)) (cancel func()) {
	return f.watchers.Add(watcher{table, fn})
}

// tell calls the watchers of table ("" for every table) with note. Call it
// after the fence is recorded.
func (f *Fences) tell(table string, note fenceNote) {
	if !f.watchers.Any() {
		return
	}
	for _, w := range f.watchers.List(nil) {
		if table == "" || w.table == table {
			w.fn(note)
		}
	}
}

// fenceKeysFrom records the fences of a notification on keys of table,
// then tells the table's watchers.
func (f *Fences) fenceKeysFrom(table string, keys []string, at time.Time) {
	for _, k := range keys {
		f.FenceKey(table, k)
	}
	f.tell(table, fenceNote{keys: keys, at: at})
}

// fenceTableFrom records a fence of a whole table from a notification,
// then tells the table's watchers.
func (f *Fences) fenceTableFrom(table string, at time.Time) {
	f.FenceTable(table)
	f.tell(table, fenceNote{all: true, at: at})
}

// fenceAllFrom records a whole-cache fence from a notification, then tells
// every watcher.
func (f *Fences) fenceAllFrom(at time.Time) {
	f.FenceAll()
	f.tell("", fenceNote{all: true, at: at})
}

// Notify calls fn with each change to the tier's table that the listener
// hears of from now on (backends.Notifier), until cancel:
//
//   - a fence on keys: Keys, the keys as the route stores them; a key the
//     route cannot name precisely (a table row's key whose fence key is not
//     a spelling the route reads back as that row) makes it All;
//   - a table fence (TRUNCATE, a key too long for a notification) or a
//     whole-cache fence (a payload this build cannot read): All;
//   - the fences going offline (the LISTEN connection lost or not proven):
//     Lost, and Watching is false until they are online again, which is
//     followed by an All, so that a read that began while fences may have
//     been missed is dropped.
//
// Source is "postgres"; At is the commit-ish time of the notification's
// fences by PostgreSQL's clock (payload.go: the earliest time one can
// have committed), zero for the reports of this process (Lost,
// coming online) and from relays without it.
func (t *Tier) Notify(fn func(backends.Outside)) (cancel func()) {
	return t.f.watch(t.table.Name, func(n fenceNote) {
		out := backends.Outside{All: n.all || n.lost, Lost: n.lost, Source: "postgres", At: n.at}
		if !out.All {
			keys := make([]string, 0, len(n.keys))
			for _, fk := range n.keys {
				k, ok := t.routeKey(fk)
				if !ok {
					keys, out.All = nil, true
					break
				}
				keys = append(keys, k)
			}
			out.Keys = keys
		}
		fn(out)
	})
}

// Watching reports whether fences are being received.
func (t *Tier) Watching() bool { return t.f.Online() }

// routeKey is the route's key of a fence key: the fence key itself when the
// route reads it as the same row (FenceKey gives it back), which holds for
// every kv key and for table keys in their canonical spelling. A text key
// that reads as JSON ("[x]", "\"a\"") has no such spelling: ok is false.
func (t *Tier) routeKey(fk string) (string, bool) {
	got, err := t.fenced.FenceKey(fk)
	return fk, err == nil && got == fk
}

var _ backends.Notifier = (*Tier)(nil)
