package coherence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/backends/postgres"
	"github.com/pgcache/pgcache/internal/testenv"
)

// TestAttachPolicy: a route added to a running coordinator gets its
// table's triggers as its AttachMode says, before its tier is made; and
// only PostgreSQL routes get a tier at all.
func TestAttachPolicy(t *testing.T) {
	ctx := context.Background()
	p := pg.Pool(t)
	c := startCoordinator(t, p, CoordinatorOptions{})
	d, err := postgres.NewDriver("pg", postgres.Options{DSN: pg.DSN(), MaxConns: 4}, backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	open := func(spec backends.RouteSpec) backends.Backend {
		t.Helper()
		b, err := d.Open(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	l1 := L1{MaxBytes: 1 << 20}

	testenv.Exec(t, p, `CREATE TABLE pol_rows (id int PRIMARY KEY, v int)`)
	rows := open(backends.RouteSpec{Name: "rows", SourceTable: "public.pol_rows"})
	if _, err := c.AddRoute(ctx, "rows", rows, l1, AttachCheck); err == nil ||
		!strings.Contains(err.Error(), "public.pol_rows has no fence triggers: run `pgcache attach public.pol_rows`") {
		t.Fatalf("check mode on a table without triggers: %v", err)
	}
	if ok, err := Attached(ctx, p, "public.pol_rows"); err != nil || ok {
		t.Fatalf("check mode attached the triggers: %v, %v", ok, err)
	}
	tier, err := c.AddRoute(ctx, "rows", rows, l1, AttachAuto)
	if err != nil {
		t.Fatalf("auto mode: %v", err)
	}
	t.Cleanup(func() { tier.Close() })
	if ok, err := Attached(ctx, p, "public.pol_rows"); err != nil || !ok {
		t.Fatalf("auto mode left the table without triggers: %v, %v", ok, err)
	}
	if _, err := c.AddRoute(ctx, "rows again", rows, l1, AttachCheck); err != nil {
		t.Fatalf("check mode on an attached table: %v", err)
	}

	kv := open(backends.RouteSpec{Name: "kv", Table: "pol_kv", Durability: "unlogged"})
	if _, err := c.AddRoute(ctx, "kv", kv, l1, AttachOwned); err != nil {
		t.Fatalf("owned mode: %v", err)
	}
	if ok, err := Attached(ctx, p, "public.pol_kv"); err != nil || !ok {
		t.Fatalf("owned mode: the kv table has no triggers: %v, %v", ok, err)
	}

	mem := memory.NewDriver("mem", 1<<20)
	if _, err := PoolOf(mem); !errors.Is(err, ErrNotFenced) {
		t.Fatalf("PoolOf(memory driver) = %v, want ErrNotFenced", err)
	}
	if pool, err := PoolOf(d); err != nil || pool != d.Pool() {
		t.Fatalf("PoolOf(postgres driver) = %v, %v", pool, err)
	}
	mb, err := mem.Open(ctx, backends.RouteSpec{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	if _, err := c.AddRoute(ctx, "m", mb, l1, AttachAuto); err == nil || !strings.Contains(err.Error(), "route m does not publish fences") {
		t.Fatalf("a memory route: %v", err)
	}
}
