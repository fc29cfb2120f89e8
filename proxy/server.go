package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/internal/auth"
	"github.com/pgcache/pgcache/pubsub"
	"github.com/pgcache/pgcache/route"
	"github.com/pgcache/pgcache/script"
	"github.com/pgcache/pgcache/tracking"
)

// Server is the RESP front: it serves clients on the listeners given to
// Serve, over the routes of one Router.
type Server struct {
	router  *route.Router
	metrics *route.Metrics
	cfg     atomic.Pointer[Config] // replaced whole by SetConfig
	users   atomic.Pointer[auth.Users]
	log     *zap.Logger
	stats   Stats
	started time.Time
	runID   string
	mem     memStats

	// ctx is handed to backend calls; Shutdown cancels it when its own
	// context runs out, so calls still running give up.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	byID      map[int64]*conn // conns by id, for CLIENT TRACKING REDIRECT
	closing   atomic.Bool
	stopping  chan struct{}  // closed by Shutdown: blocked commands end at once
	wg        sync.WaitGroup // one per connection goroutine
	nextID    atomic.Int64

	// INFO and CLIENT LIST: see cmdstats.go
	clock      atomic.Int64 // unix ms, ticked by runClock
	clockOnce  sync.Once
	ops        opsMeter
	cmdStats   []cmdStats // by command number
	errStats   errStats
	base       atomic.Pointer[statBase] // the counters at CONFIG RESETSTAT
	configFile atomic.Pointer[string]

	scripts  *script.Engine // EVAL, FUNCTION: see cmd_scripting.go
	busy     *backends.BusyThreshold
	enc      *backends.Encodings // OBJECT ENCODING's thresholds: see settings.go
	infoFunc atomic.Pointer[func(context.Context) [][2]string]
	bulkCap  atomic.Pointer[bulkCap]
	tracking *tracking.Tracker // CLIENT TRACKING; its read hook: see tracking.go
	changes  *changes.Feed     // writes and backends' reports: tracking's, and blocked clients' (blocking.go)
	waiters  *waiters          // blocked clients: see blocking.go
	pubsub   *pubsub.Broker    // Publish/Subscribe: see cmd_pubsub.go
	pubLimit atomic.Pointer[pubLimit]
	notify   atomic.Uint32 // notify-keyspace-events: see keyevents.go
	notifyMu sync.Mutex    // orders setNotify's
}

// PubSub is the server's Publish/Subscribe broker, to which the server
// attaches the transport to the other instances.
func (s *Server) PubSub() *pubsub.Broker { return s.pubsub }

// New returns a server over router's routes. metrics are the routes'
// metrics (INFO's keyspace_hits and keyspace_misses come from them; nil
// reports zeros). busy is the busy-reply-threshold the stores of those
// routes wait by (backends.Env), which scripts take too and CONFIG SET
// changes; nil: one of the server's own. log is used as given, so name it
// for the component (nil logs nothing). When reg is not nil the server's
// Stats are registered on it.
func New(router *route.Router, metrics *route.Metrics, cfg Config, env backends.Env, log *zap.Logger, reg prometheus.Registerer) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	if metrics == nil {
		metrics = route.NewMetrics(nil)
	}
	busy := env.Busy
	if busy == nil {
		busy = backends.NewBusyThreshold(backends.DefaultBusyThreshold)
	}
	enc := env.Encodings
	if enc == nil {
		enc = new(backends.Encodings)
	}
	s := &Server{
		router:    router,
		metrics:   metrics,
		log:       log,
		started:   time.Now(),
		runID:     newRunID(),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		byID:      map[int64]*conn{},
		scripts:   newScripts(log, busy.Load()),
		busy:      busy,
		enc:       enc,
		cmdStats:  make([]cmdStats, commandCount),
	}
	s.changes = changes.New(router)
	s.tracking = tracking.New(s.changes)
	s.waiters = newWaiters(s.changes)
	s.changes.Subscribe(expiries{s})
	s.pubsub = pubsub.New()
	s.pubLimit.Store(&defaultPubLimit)
	s.SetConfig(cfg)
	s.clock.Store(s.started.UnixMilli())
	s.base.Store(&statBase{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stopping = make(chan struct{})
	if reg != nil {
		reg.MustRegister(s.stats.collectors()...)
		reg.MustRegister(s.tracking.Collectors()...)
	}
	return s
}

// SetConfig replaces the server's limits (a reload). Connections take the
// new ones at their next request; MaxClients counts from the next accept.
func (s *Server) SetConfig(cfg Config) {
	s.cfg.Store(&cfg)
}

// config is the configuration now. Callers load it once per use: two loads
// may see two configs.
func (s *Server) config() *Config { return s.cfg.Load() }

// Stats returns the server's live counters.
func (s *Server) Stats() *Stats { return &s.stats }

// SetInfoFunc adds the lines f returns to INFO, under "# Backends" (the
// drivers' backends.InfoSection lines, say). f runs on the INFO caller's
// connection, so it should be quick.
func (s *Server) SetInfoFunc(f func(ctx context.Context) [][2]string) {
	if f == nil {
		s.infoFunc.Store(nil)
		return
	}
	s.infoFunc.Store(&f)
}

// Serve accepts clients on ln until Shutdown, then returns nil. It may be
// called for several listeners. Other accept errors are returned.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln) {
		ln.Close()
		return nil
	}
	defer s.untrack(ln)
	s.clockOnce.Do(func() { go s.runClock() })
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			// As net/http does: out of descriptors and the like pass.
			var ne net.Error
			if errors.As(err, &ne) && ne.Temporary() { //nolint:staticcheck // the accept errors worth retrying
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", zap.Error(err), zap.Duration("in", delay))
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("resp: accept: %w", err)
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, ln)
}

// accept starts serving nc, or refuses it as Redis does when MaxClients
// are connected.
func (s *Server) accept(nc net.Conn) {
	c := newConn(s, nc, s.nextID.Add(1))
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.config().MaxClients {
		s.mu.Unlock()
		s.stats.RejectedConnections.Add(1)
		// A fresh socket's send buffer takes this at once; the deadline
		// only guards the accept loop against the unexpected.
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-" + errMaxClients + "\r\n"))
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.byID[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	s.stats.ConnectionsTotal.Add(1)
	s.stats.ConnectedClients.Add(1)
	go c.serve()
}

// forget closes a connection whose goroutine is ending.
func (s *Server) forget(c *conn) {
	c.cancel()
	c.nc.Close()
	s.mu.Lock()
	delete(s.conns, c)
	delete(s.byID, c.id)
	s.mu.Unlock()
	if c.gone.CompareAndSwap(false, true) { // else CLIENT KILL counted it
		s.stats.ConnectedClients.Add(-1)
	}
	s.wg.Done()
}

// connByID returns the open connection with id, or nil.
// unlist makes c unknown by its id (CLIENT KILL ID, a tracking redirect);
// forget drops the rest of it.
func (s *Server) unlist(c *conn) {
	s.mu.Lock()
	delete(s.byID, c.id)
	s.mu.Unlock()
}

func (s *Server) connByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// Shutdown stops accepting, closes idle connections at once and those
// blocked in a command (BLPOP…, as Redis does), lets the batches being run
// finish and their replies be written, then closes those connections too. When ctx ends first it cancels the backend calls still
// running, closes every connection, waits for their goroutines, and
// returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.closing.Swap(true) {
		close(s.stopping)
	}
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	// A connection waiting for a request returns from its read at once; one
	// running a batch finishes it and then sees closing (see conn.read).
	for c := range s.conns {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close() // unblocks a write to a client that does not read
	}
	s.mu.Unlock()
	<-done
	return fmt.Errorf("resp: shutdown: %w", ctx.Err())
}

// bulkCap is the longest argument the routes of table t can take under
// config cfg.
type bulkCap struct {
	t   *route.Table
	cfg *Config
	n   int64
}

// maxBulk is MaxBulkBytes, lowered to the largest MaxValueBytes of the
// routes RESP reaches when every one of them has one: a longer argument
// could not be stored anywhere, so it is refused before it is read. It is
// worked out once per route table.
func (s *Server) maxBulk() int64 {
	t, cfg := s.router.Current(), s.config()
	if bc := s.bulkCap.Load(); bc != nil && bc.t == t && bc.cfg == cfg {
		return bc.n
	}
	var largest int64
	bounded := false
	for _, r := range t.Routes() {
		if len(r.Prefixes) == 0 {
			continue // HTTP only
		}
		if r.MaxValueBytes <= 0 {
			bounded = false
			break
		}
		bounded = true
		largest = max(largest, r.MaxValueBytes)
	}
	n := cfg.MaxBulkBytes
	if bounded && largest < n {
		n = largest
	}
	s.bulkCap.Store(&bulkCap{t: t, cfg: cfg, n: n})
	return n
}

// newRunID is INFO's run_id: 40 random hex digits, new at every start.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
