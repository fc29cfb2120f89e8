package coherence

import "time"

// Proven returns a time before which every fence for the tier's table has
// reached it (Fences.Proven): once it passes the moment the last write
// committed, the tier's entries can be audited against the table.
func (t *Tier) Proven() time.Time { return t.f.Proven() }

// Stale counts the tier's valid entries whose value differs from what
// current returns for their key: the audit of `pgcache bench coherence`.
func (t *Tier) Stale(current func(key string) ([]byte, bool, error)) (entries, stale int, err error) {
	var firstErr error
	t.Entries(func(k string, v []byte) bool {
		entries++
		now, ok, err := current(k)
		if err != nil {
			firstErr = err
			return false
		}
		if !ok || string(now) != string(v) {
			stale++
		}
		return true
	})
	return entries, stale, firstErr
}
