package server

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pgcache/pgcache/internal/pgcachetest"
)

// The first start against a database pgcache has never used, with a kv
// route behind an L1, warns about nothing: creating the fence log, the
// table and its triggers is the normal course of a first start.
func TestFirstStartOnAFreshDatabaseWarnsNothing(t *testing.T) {
	const db = "server_fresh"
	if err := pg.CreateDatabase(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	// Dropped after the instance (cleanups run last first), for the next
	// run of the test in this process (-count).
	t.Cleanup(func() {
		if err := pg.DropDatabase(context.Background(), db); err != nil {
			t.Error(err)
		}
	})
	core, logs := observer.New(zapcore.WarnLevel)
	s := pgcachetest.Start(t, New, pgcachetest.Config{Log: zap.New(core), YAML: `
backends:
  pg:  {type: postgres, dsn: "` + pg.DSNFor(db) + `"}
  mem: {type: memory}
routes:
  - {name: kv, prefix: "pg:", backend: pg, table: fresh_kv, l1: {max_bytes: 8MiB}}
  - {name: memory, prefix: "", backend: mem}
`}).Server
	ready(t, s)
	rc := redisClient(t, s)
	if err := rc.Set(context.Background(), "pg:a", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, e := range logs.All() {
		t.Errorf("%s %q %v", e.Level, e.Message, e.ContextMap())
	}
}
