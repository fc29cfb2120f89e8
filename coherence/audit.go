package coherence

import "time"

// Proven returns a time before which every fence for the tier's table has
// reached it (Fences.Proven): once it passes the moment the last write
// committed, the tier's entries can be audited against the table.
func (t *Tier) Proven() time.Time { return t.f.Proven() }
