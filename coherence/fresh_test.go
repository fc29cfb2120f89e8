package coherence

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The first start against a database pgcache has never used is not a
// problem worth a warning: the relay may look for the fence log before the
// listener's first connect has created it, and waits for it quietly.
func TestFreshDatabaseStartsWithoutWarnings(t *testing.T) {
	ctx := context.Background()
	const db = "coherence_fresh"
	if err := pg.CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	p, err := pgxpool.New(ctx, pg.DSNFor(db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	core, logs := observer.New(zap.WarnLevel)
	c := NewCoordinator(p, CoordinatorOptions{}, zap.New(core))
	c.Start()
	t.Cleanup(c.Close)
	waitFor(t, "listener online", func() bool { s, _ := c.Listener.State(); return s == StateOnline })
	waitFor(t, "relay active", c.Relay.Stats.Active.Load)
	for _, e := range logs.All() {
		t.Errorf("%s %q %v", e.Level, e.Message, e.ContextMap())
	}
}
