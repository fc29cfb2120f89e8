package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/auth"
	"github.com/pgcache/pgcache/route"
)

// Data is the data API server: /{route}/get, set, del and mget.
type Data struct {
	router *route.Router
	cfg    Config
	log    *zap.Logger
	m      *metrics
	srv    *fasthttp.Server
	users  atomic.Pointer[auth.Users]

	// ctx is what backend calls run under. It is not the request's context:
	// fasthttp cancels that one as soon as Shutdown starts, and Shutdown is
	// meant to let in-flight requests finish. It is cancelled only when
	// Shutdown's own deadline passes, to cut short backend calls still
	// running then.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	lns    []net.Listener
}

// NewData returns a data API server on router. log is used as given (the
// caller names it) and may be nil; reg receives the HTTP-level metrics
// (pgcache_http_requests_total) and may be nil.
func NewData(router *route.Router, cfg Config, log *zap.Logger, reg prometheus.Registerer) *Data {
	if log == nil {
		log = zap.NewNop()
	}
	cfg.MaxBodyBytes = min(cfg.MaxBodyBytes, math.MaxInt) // fasthttp counts the body in an int
	ctx, cancel := context.WithCancel(context.Background())
	d := &Data{
		router: router,
		cfg:    cfg,
		log:    log,
		m:      newMetrics(reg),
		ctx:    ctx,
		cancel: cancel,
	}
	d.srv = &fasthttp.Server{
		Handler:      d.handle,
		ErrorHandler: d.handleError,
		Logger:       fasthttpLogger{d.log.Sugar()},

		Concurrency:        cfg.MaxConns,
		ReadBufferSize:     cfg.ReadBufferSize,
		ReadTimeout:        cfg.ReadTimeout,
		WriteTimeout:       cfg.WriteTimeout,
		IdleTimeout:        cfg.IdleTimeout,
		MaxRequestBodySize: int(cfg.MaxBodyBytes),

		// A set's body is a value, whatever its Content-Type says: never
		// parse it as a form.
		DisablePreParseMultipartForm: true,
		// Tell keep-alive clients to reconnect (to the next instance) once
		// Shutdown has started.
		CloseOnShutdown: true,
		// Values may be secrets: fasthttp's error logs must not quote requests.
		SecureErrorLogMessage: true,
		NoDefaultServerHeader: true,
	}
	return d
}

// Serve answers data requests on ln until Shutdown, and then returns nil; it
// returns nil at once, closing ln, when Shutdown came first. Any other return
// is an error: the listener failed, or was closed under it.
func (d *Data) Serve(ln net.Listener) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	d.lns = append(d.lns, ln)
	d.mu.Unlock()

	err := d.srv.Serve(ln)
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	switch {
	case closed:
		return nil
	case err == nil: // fasthttp returns nil when the listener was closed under it
		return fmt.Errorf("http: serve %s: %w", ln.Addr(), net.ErrClosed)
	}
	return fmt.Errorf("http: serve %s: %w", ln.Addr(), err)
}

// Shutdown stops accepting connections, lets in-flight requests finish
// (keep-alive connections are closed once idle, and told to close in the
// answer to a request in flight) and returns. When ctx ends first, it cancels
// the backend calls still running, so their requests answer 503, and returns
// ctx's error; fasthttp leaves the connections still open to their timeouts.
func (d *Data) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	lns := d.lns
	d.mu.Unlock()

	err := d.srv.ShutdownWithContext(ctx)
	// A Serve that recorded its listener but had not yet handed it to
	// fasthttp escaped the shutdown above: closing the listener makes it
	// return at once. Closing one twice does no harm.
	for _, ln := range lns {
		_ = ln.Close()
	}
	d.cancel()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("http: shutdown: %w", err)
	}
	return nil
}

// handleError answers a request fasthttp could not read. fasthttp closes the
// connection after it, since the rest of the stream cannot be trusted.
func (d *Data) handleError(ctx *fasthttp.RequestCtx, err error) {
	var (
		small  *fasthttp.ErrSmallBuffer
		netErr net.Error
	)
	switch {
	case errors.As(err, &small):
		replyError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge,
			"request header too large: limit "+strconv.Itoa(d.cfg.ReadBufferSize)+" bytes")
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		replyError(ctx, fasthttp.StatusRequestEntityTooLarge,
			"request body too large: limit "+strconv.FormatInt(d.cfg.MaxBodyBytes, 10)+" bytes")
	case errors.As(err, &netErr) && netErr.Timeout():
		replyError(ctx, fasthttp.StatusRequestTimeout, "request timeout")
	default:
		replyError(ctx, fasthttp.StatusBadRequest, "bad request: "+err.Error())
	}
	d.m.count(actionOther, ctx.Response.StatusCode())
}

// fasthttpLogger sends fasthttp's own messages (a connection that broke, the
// connection limit reached) to zap at debug level: they are per connection,
// and a client can cause them at will.
type fasthttpLogger struct{ l *zap.SugaredLogger }

func (l fasthttpLogger) Printf(format string, args ...any) { l.l.Debugf(format, args...) }

var _ fasthttp.Logger = fasthttpLogger{}
