package coherence

import "github.com/pgcache/pgcache/backends"

// Expired keys, for every instance. A kv table's sweeper deletes expired
// rows; their fence triggers fence the keys as any DELETE's do, which says
// nothing of why. So the sweep of a table behind a tier also logs, in the
// transaction of its DELETE, one row of the keys it deleted under the
// table's name with expiredPrefix in front ("#expired:public.kv"), and
// the relay publishes that row as it does any table's keys. Each
// instance's listener takes such a notification for what it is, not a
// fence, and its tier over the table reports the keys to NotifyExpired's
// subscribers: every instance hears of each expiry once, the sweeping one
// too (from its relay or the NOTIFY, not both: see Listener.applyLocal; a
// drain that fails to commit is taken again, and the relay's instance
// hears of its keys twice).
//
// Nothing new travels on the channel: older relays publish the row as a
// table's keys, and older listeners fence those keys of a table no tier
// has, which costs them nothing but a few buckets' fences.
const expiredPrefix = "#expired:"

// expiryLogger is a store whose sweeps log what they delete
// (postgres.KV.LogExpiries), and can be told that rows changed elsewhere
// (LookSoon): their deadlines, written through another instance, are not
// known to its sweeper until it looks.
type expiryLogger interface {
	LogExpiries(insert string)
	LookSoon()
}

// expiryLogSQL is the statement a sweep of table runs to log the keys it
// deleted, which it reads from expired(key), as its triggers render keys.
func expiryLogSQL(table string) string {
	return `INSERT INTO ` + Schema + `.fence_log (tbl, keys) SELECT ` + quoteLiteral(expiredPrefix+table) +
		`, jsonb_agg(key) FROM expired HAVING count(*) > 0`
}

// logExpiries has the tier's store log its sweeps' expired keys, once the
// fence log exists (the listener's Setup, or a tier's prepare, has run).
func (t *Tier) logExpiries() {
	if l, ok := backends.As[expiryLogger](t.Backend); ok {
		l.LogExpiries(expiryLogSQL(t.table.Name))
	}
}

// NotifyExpired calls fn with the keys of the tier's table that a sweep of
// any instance deleted because they expired (backends.ExpiryNotifier), as
// the route stores them, until cancel. It subscribes to the store's own
// reports too, which makes its sweeper follow the deadlines, and drops
// them: the store logs what it deletes (logExpiries), which comes back
// here. Each fence of the table tells the sweeper to look again soon, for
// deadlines written elsewhere. Keys a listener did not hear of (while it
// was offline) are not reported.
func (t *Tier) NotifyExpired(fn func(keys []string)) (cancel func()) {
	logger, ok := backends.As[expiryLogger](t.Backend)
	if !ok {
		return func() {} // rows of a table route do not expire
	}
	unfence := t.f.watch(t.table.Name, func(fenceNote) { logger.LookSoon() })
	unwatch := t.f.watch(expiredPrefix+t.table.Name, func(n fenceNote) {
		if n.all || n.lost {
			return // a whole-cache fence, or keys too long to publish: none to name
		}
		keys := make([]string, 0, len(n.keys))
		for _, fk := range n.keys {
			if k, ok := t.routeKey(fk); ok {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			fn(keys)
		}
	})
	stop := func() {}
	if e, ok := backends.As[backends.ExpiryNotifier](t.Backend); ok {
		stop = e.NotifyExpired(func([]string) {})
	}
	return func() {
		stop()
		unwatch()
		unfence()
	}
}

var _ backends.ExpiryNotifier = (*Tier)(nil)
