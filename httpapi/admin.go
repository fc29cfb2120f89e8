package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof" // its init also registers on http.DefaultServeMux, which pgcache never serves
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/auth"
)

// Limits of the admin server. It serves an operator and a scraper on
// loopback, so fixed values do; the write timeout outlasts pprof's default
// 30s CPU profile (a longer one is refused by pprof itself).
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 30 * time.Second
	adminWriteTimeout      = 2 * time.Minute
	adminIdleTimeout       = 60 * time.Second
	// readyTimeout bounds one readiness check of every backend.
	readyTimeout = 5 * time.Second
	// maxLoadBytes bounds a config posted to /load.
	maxLoadBytes = 4 << 20
)

// AdminOptions are what the admin API reports on and acts through. A nil
// field makes its endpoint answer 501, except Ready (nil: always ready).
type AdminOptions struct {
	// Gatherer is exported on GET /metrics in the Prometheus text format.
	Gatherer prometheus.Gatherer
	// Ready checks every backend and returns one reason per backend that
	// cannot serve, empty when all can (GET /readyz).
	Ready func(ctx context.Context) []string
	// Config returns the running config as JSON with secrets redacted
	// (GET /config).
	Config func() ([]byte, error)
	// Load validates a new config and swaps it in (POST /load). Its ctx is
	// not cancelled when the client goes away: a reload runs to its end.
	Load func(ctx context.Context, body []byte) error
	// L1 returns the coherent L1 tiers of the routes serving now, in a
	// slice of its own (GET /debug/l1).
	L1 func() []L1Tier
}

// Admin is the admin API server.
type Admin struct {
	opts  AdminOptions
	log   *zap.Logger
	srv   *http.Server
	users atomic.Pointer[auth.Users]
}

// NewAdmin returns an admin API server. log is used as given (the caller
// names it) and may be nil.
func NewAdmin(opts AdminOptions, log *zap.Logger) *Admin {
	if log == nil {
		log = zap.NewNop()
	}
	a := &Admin{opts: opts, log: log}
	a.srv = &http.Server{
		Handler:           a.requireAuth(a.Handler()),
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		ErrorLog:          warnLog(a.log),
	}
	return a
}

// Handler returns the admin API's routes, for tests and for mounting
// elsewhere. Go 1.22 patterns answer a wrong method 405 with Allow, and
// GET routes answer HEAD too.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", a.metrics())
	mux.HandleFunc("GET /config", a.config)
	mux.HandleFunc("POST /load", a.load)
	mux.HandleFunc("GET /debug/l1", a.debugL1)

	// pprof mounted by hand: its handlers sit on http.DefaultServeMux only
	// as a side effect of the import, and nothing serves that mux.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // the index and every named profile
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// Serve answers admin requests on ln until Shutdown, and then returns nil;
// it returns nil at once, closing ln, when Shutdown came first. Any other
// return is an error.
func (a *Admin) Serve(ln net.Listener) error {
	err := a.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		_ = ln.Close() // net/http leaves it open when Shutdown came first
		return nil
	}
	return fmt.Errorf("admin: serve %s: %w", ln.Addr(), err)
}

// Shutdown stops accepting connections and waits for in-flight requests. When
// ctx ends first it closes the connections still open (a CPU profile may run
// for a minute) and returns ctx's error.
func (a *Admin) Shutdown(ctx context.Context) error {
	if err := a.srv.Shutdown(ctx); err != nil {
		_ = a.srv.Close()
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	return nil
}

// healthz answers 200 while the process can answer at all.
func (a *Admin) healthz(w http.ResponseWriter, _ *http.Request) {
	text(w, http.StatusOK, "ok")
}

// readyz answers 200 when every backend can serve, else 503 with one line
// per backend that cannot.
func (a *Admin) readyz(w http.ResponseWriter, r *http.Request) {
	if a.opts.Ready == nil {
		text(w, http.StatusOK, "ok")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	reasons := a.opts.Ready(ctx)
	if len(reasons) == 0 {
		text(w, http.StatusOK, "ok")
		return
	}
	w.Header().Set("Content-Type", contentTypeText)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	for _, reason := range reasons {
		_, _ = io.WriteString(w, oneLine(reason)+"\n")
	}
}

func (a *Admin) metrics() http.Handler {
	if a.opts.Gatherer == nil {
		return notImplemented("metrics")
	}
	return promhttp.HandlerFor(a.opts.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      metricsLog{a.log},
		ErrorHandling: promhttp.ContinueOnError, // a failing collector must not hide the others
	})
}

// config answers the running config as the server renders it.
func (a *Admin) config(w http.ResponseWriter, _ *http.Request) {
	if a.opts.Config == nil {
		text(w, http.StatusNotImplemented, "config is not available")
		return
	}
	b, err := a.opts.Config()
	if err != nil {
		text(w, http.StatusInternalServerError, "config: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// load hands a new config to the server's reload.
func (a *Admin) load(w http.ResponseWriter, r *http.Request) {
	if a.opts.Load == nil {
		text(w, http.StatusNotImplemented, "load is not implemented yet")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLoadBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			text(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("config larger than %d bytes", maxLoadBytes))
			return
		}
		text(w, http.StatusBadRequest, "read config: "+err.Error())
		return
	}
	if err := a.opts.Load(context.WithoutCancel(r.Context()), body); err != nil {
		// One reason per line: a config can be wrong in several places,
		// and `pgcache reload` prints them as they come.
		w.Header().Set("Content-Type", contentTypeText)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, strings.TrimRight(err.Error(), "\n")+"\n")
		return
	}
	text(w, http.StatusOK, "ok")
}

// metricsLog is promhttp's error log. A collector's error is worth a
// warning; a scraper that hung up early (`curl …/metrics | head`) is not a
// problem of the server, and promhttp reports it once per metric family
// left to write: those go to debug.
type metricsLog struct{ log *zap.Logger }

func (l metricsLog) Println(v ...any) {
	msg := strings.TrimSuffix(fmt.Sprintln(v...), "\n")
	for _, a := range v {
		if err, ok := a.(error); ok && clientGone(err) {
			l.log.Debug("metrics: the client went away", zap.String("detail", msg))
			return
		}
	}
	l.log.Warn(msg)
}

// clientGone reports a write to a client that closed its connection.
func clientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrHandlerTimeout)
}

// warnLog adapts log for net/http's error log: what it reports (a failed
// accept, a recovered panic) is worth a warning.
func warnLog(log *zap.Logger) *stdlog.Logger {
	l, err := zap.NewStdLogAt(log, zap.WarnLevel)
	if err != nil { // only for an invalid level
		panic(err)
	}
	return l
}

func notImplemented(what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusNotImplemented, what+" is not available")
	})
}

// text answers status with one line of text.
func text(w http.ResponseWriter, status int, line string) {
	w.Header().Set("Content-Type", contentTypeText)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, oneLine(line)+"\n")
}
