package coherence

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Coordinator keeps the L1 tiers of one PostgreSQL database coherent: it
// owns the Fences they check, the Listener that feeds them and this
// instance's Relay candidate.
type Coordinator struct {
	Fences   *Fences
	Listener *Listener
	Relay    *Relay

	pool   *pgxpool.Pool
	cancel context.CancelFunc
	wg     sync.WaitGroup
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
	c := &Coordinator{Fences: NewFences(opts.Buckets), pool: pool}
	lo := opts.ListenerOptions
	lo.Conn = pool.Config().ConnConfig.Copy()
	lo.Canary = c.sendCanary
	lo.QueueUsage = func(ctx context.Context) (u float64, err error) {
		err = pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&u)
		return u, err
	}
	c.Listener = NewListener(c.Fences, lo, log.Named("listener"))
	c.Relay = NewRelay(pool.Config().ConnConfig.Copy(), opts.RelayInterval, log.Named("relay"))
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

// Start runs the listener and the relay until Close.
func (c *Coordinator) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Go(func() { c.Listener.Run(ctx) })
	c.wg.Go(func() { c.Relay.Run(ctx) })
}

// Close stops the listener and the relay; the fences go offline.
func (c *Coordinator) Close() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	c.Fences.SetOnline(false)
}
