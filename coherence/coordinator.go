package coherence

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
)

// Coordinator keeps the L1 tiers of one PostgreSQL database coherent: it
// owns the Fences they check, the Listener that feeds them and this
// instance's Relay candidate.
type Coordinator struct {
	Fences   *Fences
	Listener *Listener
	Relay    *Relay

	pool   *pgxpool.Pool
	log    *zap.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	prepares []func(ctx context.Context) error
	tiers    []*Tier
}

// CoordinatorOptions tune a Coordinator; zero values take the defaults.
type CoordinatorOptions struct {
	Buckets       int
	RelayInterval time.Duration
	ListenerOptions
}

// NewCoordinator returns a coordinator for the database pool connects to.
// Start runs it.
func NewCoordinator(pool *pgxpool.Pool, opts CoordinatorOptions, log *zap.Logger) *Coordinator {
	c := &Coordinator{Fences: NewFences(opts.Buckets), pool: pool, log: log}
	lo := opts.ListenerOptions
	lo.Conn = pool.Config().ConnConfig.Copy()
	lo.Canary = c.sendCanary
	lo.Prepare = c.prepare
	lo.QueueUsage = func(ctx context.Context) (u float64, err error) {
		err = pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&u)
		return u, err
	}
	c.Listener = NewListener(c.Fences, lo, log.Named("listener"))
	c.Relay = NewRelay(pool.Config().ConnConfig.Copy(), opts.RelayInterval, log.Named("relay"))
	c.Relay.local = c.Listener.applyLocal
	return c
}

func (c *Coordinator) sendCanary(ctx context.Context, token string) error {
	tok, _ := json.Marshal(token)
	_, err := c.pool.Exec(ctx, "INSERT INTO "+Schema+".fence_log VALUES ($1, $2)", canaryTable, tok)
	return err
}

// Attach installs the fence triggers on table (see Attach).
func (c *Coordinator) Attach(ctx context.Context, table string) error {
	return Attach(ctx, c.pool, table)
}

// Pool is the pool the coordinator works through.
func (c *Coordinator) Pool() *pgxpool.Pool { return c.pool }

// OnConnect adds work that must succeed on every (re)connect of the
// listener before L1 is used: creating a table, attaching its triggers.
func (c *Coordinator) OnConnect(f func(ctx context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prepares = append(c.prepares, f)
}

func (c *Coordinator) prepare(ctx context.Context) error {
	if err := Setup(ctx, c.pool); err != nil {
		return fmt.Errorf("set up %s schema: %w", Schema, err)
	}
	c.mu.Lock()
	prepares := append([]func(context.Context) error(nil), c.prepares...)
	c.mu.Unlock()
	for _, t := range c.Tiers() {
		if t.prepare != nil {
			prepares = append(prepares, t.prepare)
		}
	}
	for _, p := range prepares {
		if err := p(ctx); err != nil {
			return err
		}
	}
	for _, t := range c.Tiers() {
		t.logExpiries()
	}
	return nil
}

// NewTier returns an L1 tier in front of b checked against this
// coordinator's fences, and keeps it for the metrics.
func (c *Coordinator) NewTier(route string, b backends.Backend, opts L1) (*Tier, error) {
	t, err := NewTier(b, c.Fences, opts)
	if err != nil {
		return nil, err
	}
	t.route = route
	c.mu.Lock()
	c.tiers = append(c.tiers, t)
	c.mu.Unlock()
	return t, nil
}

// AddTier is NewTier for a tier whose table needs work on every
// (re)connect of the listener before fences for it can be trusted:
// creating the table, attaching its triggers. prepare runs for as long as
// the tier is open, and is forgotten when it closes.
//
// On a coordinator that is already running (a reload adds a route),
// prepare also runs once now, before the tier is returned: the listener
// may be online already and would not run it until its next reconnect,
// and a tier must never serve a table whose writes publish no fences. Its
// error is returned, and the tier is not made.
func (c *Coordinator) AddTier(ctx context.Context, route string, b backends.Backend, opts L1, prepare func(ctx context.Context) error) (*Tier, error) {
	t, err := NewTier(b, c.Fences, opts)
	if err != nil {
		return nil, err
	}
	t.route = route
	t.prepare = prepare
	c.mu.Lock()
	c.tiers = append(c.tiers, t)
	running := c.cancel != nil
	c.mu.Unlock()
	if running && prepare != nil {
		if err := prepare(ctx); err != nil {
			// Forgotten by Tiers; b stays the caller's to close.
			t.closed.Store(true)
			t.cache.StopAllGoroutines()
			return nil, err
		}
		t.logExpiries() // prepare attached the triggers, which log: the log exists
	}
	return t, nil
}

// Tiers returns the tiers made by NewTier that are not closed.
func (c *Coordinator) Tiers() []*Tier {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := c.tiers[:0]
	for _, t := range c.tiers {
		if !t.closed.Load() {
			live = append(live, t)
		}
	}
	c.tiers = live
	return append([]*Tier(nil), live...)
}

// Start runs the listener and the relay until Close.
func (c *Coordinator) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	c.wg.Go(func() { c.Listener.Run(ctx) })
	c.wg.Go(func() { c.Relay.Run(ctx) })
}

// Close stops the listener and the relay; the fences go offline.
func (c *Coordinator) Close() {
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	c.Fences.SetOnline(false)
}
