package valkey

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/deadline"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/pubsub"
)

// Connecting in the background: the first attempt at once, then with a
// doubling pause. valkey-go takes over once a client exists.
const (
	reconnectMin = 50 * time.Millisecond
	reconnectMax = time.Second
)

// checkTimeout bounds the PING of Check (/readyz), under command_timeout.
const checkTimeout = time.Second

// Driver is one configured Valkey deployment: a valkey-go client shared by
// the routes that use the backend.
type Driver struct {
	name      string
	opts      Options
	timeout   time.Duration       // command_timeout
	deadlines *deadline.Shared    // calls' command_timeout contexts
	enc       *backends.Encodings // the server's encoding thresholds, for OBJECT ENCODING in runs
	cache     *clientCache        // nil: client_cache off
	log       *zap.Logger
	stats     stats

	client    atomic.Pointer[client] // nil until the first connection succeeds
	r2        resp2Client            // for clients speaking RESP2 (resp2.go)
	connErr   atomic.Pointer[error]  // why the last connection attempt failed
	tried     chan struct{}          // closed once the first attempt is over
	triedOnce sync.Once
	quit      chan struct{} // closed by Close: stop connecting
	done      chan struct{} // closed when the connecting goroutine is gone

	mu     sync.Mutex
	routes map[string]int // open Stores by route name
	closed bool
}

// client is a connected valkey-go client and what it found out.
type client struct {
	valkey.Client
	cluster bool // cluster mode: multi-key commands are split by slot
}

// NewDriver fills in the defaults of o, validates it, and returns a driver
// that has started connecting.
func NewDriver(name string, o Options, env backends.Env) (*Driver, error) {
	o.setDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	opt, err := o.clientOption()
	if err != nil {
		return nil, err
	}
	log := env.Log
	if log == nil {
		log = zap.NewNop()
	}
	d := &Driver{
		name:      name,
		opts:      o,
		enc:       env.Encodings,
		timeout:   time.Duration(o.CommandTimeout),
		deadlines: deadline.New(time.Duration(o.CommandTimeout)),
		log:       log.Named("valkey"), // the caller names the backend (backends.Factory)
		tried:     make(chan struct{}),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		routes:    map[string]int{},
	}
	if cc := o.ClientCache; cc != nil {
		// A request still unanswered after ConnWriteTimeout, plus a PING
		// interval, ends its connection: by then an abandoned fill's reply
		// has come or never will.
		grace := opt.ConnWriteTimeout + valkey.DefaultTCPKeepAlive + time.Second
		d.cache = newClientCache(time.Duration(cc.TTL), int64(cc.MaxBytes), grace)
		opt.NewCacheStoreFn = d.cache.newShard
	}
	go d.connect(opt)
	return d, nil
}

// connect makes the client, retrying until it succeeds or Close. valkey-go
// needs a server to detect standalone or cluster mode, so the client cannot
// exist before one answers.
func (d *Driver) connect(opt valkey.ClientOption) {
	defer close(d.done)
	defer d.triedOnce.Do(func() { close(d.tried) })
	pause := reconnectMin
	for attempt := 1; ; attempt++ {
		c, err := valkey.NewClient(opt)
		if err == nil {
			d.client.Store(&client{Client: c, cluster: c.Mode() == valkey.ClientModeCluster})
			d.log.Info("connected", zap.Strings("addrs", opt.InitAddress), zap.String("mode", string(c.Mode())))
			return
		}
		d.connErr.Store(&err)
		d.triedOnce.Do(func() { close(d.tried) })
		if attempt == 1 {
			d.log.Warn("cannot connect; retrying in the background", zap.Strings("addrs", opt.InitAddress), zap.Error(err))
		} else {
			d.log.Debug("cannot connect", zap.Int("attempt", attempt), zap.Error(err))
		}
		t := time.NewTimer(pause)
		select {
		case <-d.quit:
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, reconnectMax)
	}
}

// begin starts a call: ctx bounded by command_timeout (unless the caller's
// deadline is sooner) and the client. Before the first connection it waits
// for the first attempt, no longer: later calls fail fast.
func (d *Driver) begin(ctx context.Context, op string) (context.Context, context.CancelFunc, *client, error) {
	cctx := d.deadlines.Of(ctx)
	c := d.client.Load()
	if c == nil {
		select {
		case <-d.tried:
		case <-cctx.Done():
		}
		if c = d.client.Load(); c == nil {
			return nil, nil, nil, d.fail(ctx, op, d.notConnected())
		}
	}
	return cctx, noCancel, c, nil
}

func noCancel() {}

func (d *Driver) notConnected() error {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return errClosed
	}
	if err := d.connErr.Load(); err != nil {
		return fmt.Errorf("%w: %w", errNotConnected, *err)
	}
	return errNotConnected
}

// Open returns the Backend of one route.
//
// Routes that share a Valkey backend share its keyspace, and the router has
// stripped each route's RESP prefix before the backend sees a key. So each
// route's keys are stored under "<route name>:". The namespace depends only
// on the route's own name, never on which or how many routes are open, so a
// reload that adds or removes routes moves no data. With raw_keys the keys
// are stored as they are (what plain redis-cli sees); then the backend
// belongs to one route, and opening another is refused.
func (d *Driver) Open(_ context.Context, spec backends.RouteSpec) (backends.Backend, error) {
	if err := refuse(spec); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("open: %w", errClosed)
	}
	prefix := spec.Name + ":"
	if d.opts.RawKeys {
		prefix = ""
		for other, n := range d.routes {
			if other != spec.Name && n > 0 {
				return nil, rawKeysTaken(other)
			}
		}
	}
	d.routes[spec.Name]++
	return &Store{d: d, route: spec.Name, prefix: prefix}, nil
}

func (d *Driver) release(route string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.routes[route]--; d.routes[route] <= 0 {
		delete(d.routes, route)
	}
}

// checkRoutes refuses the table options, which only postgres has, and a
// second route on a raw_keys backend (backends.RouteCheck).
func checkRoutes(options map[string]any, specs []backends.RouteSpec) []error {
	var o Options
	raw := decode.Strict(options, &o) == nil && o.RawKeys // bad options: New says why
	errs := make([]error, len(specs))
	for i, s := range specs {
		errs[i] = refuse(s)
		if errs[i] == nil && raw && i > 0 {
			errs[i] = rawKeysTaken(specs[0].Name)
		}
	}
	return errs
}

func rawKeysTaken(route string) error {
	return &backends.SpecError{Field: "backend",
		Reason: fmt.Sprintf("raw_keys: the backend's keys belong to route %q already", route)}
}

func refuse(spec backends.RouteSpec) error { return backends.RefuseTables(spec, TypeName) }

// Check pings a server (/readyz).
func (d *Driver) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(d.timeout, checkTimeout))
	defer cancel()
	cctx, done, c, err := d.begin(ctx, "ping")
	if err != nil {
		return err
	}
	defer done()
	if err := c.Do(cctx, c.B().Ping().Build()).Error(); err != nil {
		return d.fail(ctx, "ping", err)
	}
	return nil
}

// Close stops connecting and closes the client, after the calls in flight.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	close(d.quit)
	<-d.done
	if c := d.client.Load(); c != nil {
		c.Close()
	}
	d.closeResp2()
	return nil
}

var (
	_ backends.Driver      = (*Driver)(nil)
	_ backends.Checker     = (*Driver)(nil)
	_ backends.InfoSection = (*Driver)(nil)
	_ backends.Collector   = (*Driver)(nil)
	_ backends.RouteCheck  = checkRoutes
)

// PubSubTransport carries Publish/Subscribe messages between the pgcache
// instances that share this Valkey (pubsub.Carrier), over a client of its
// own, on channels under prefix.
func (d *Driver) PubSubTransport(prefix string) (pubsub.Transport, error) {
	opt, err := d.opts.clientOption()
	if err != nil {
		return nil, err
	}
	opt.DisableCache = true
	return pubsub.DialValkey(opt, prefix), nil
}

var _ pubsub.Carrier = (*Driver)(nil)
