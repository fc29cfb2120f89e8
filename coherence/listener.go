package coherence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/coherence/fence"
)

// Listener timing. A canary NOTIFY goes out every PingInterval while the
// connection is quiet; one not back within DeadAfter means fences may be
// lost (a half-open TCP connection, a pooler that drops LISTEN): L1 goes
// off and the connection is replaced.
const (
	DefaultPingInterval = 3 * time.Second
	DefaultDeadAfter    = 7 * time.Second // + up to PingInterval: a silent connection is noticed within 10 s
	waitSlice           = time.Second     // how often the wait loop looks at the clock
	minBackoff          = 100 * time.Millisecond
	maxBackoff          = 5 * time.Second
)

// ListenerState is where a listener is.
type ListenerState int32

const (
	StateConnecting ListenerState = iota // no LISTEN connection
	StateProving                         // LISTENing; the first canary is not back yet
	StateOnline                          // fences arrive: L1 is in use
	StateStopped
)

func (s ListenerState) String() string {
	return [...]string{"connecting", "proving", "online", "stopped"}[s]
}

// CanarySender writes a canary into the fence log, where writers' fences go:
// one that comes back over LISTEN proves the whole path (log, relay,
// NOTIFY, this connection) delivers.
type CanarySender func(ctx context.Context, token string) error

// ListenerOptions configure a Listener.
type ListenerOptions struct {
	// Conn configures the dedicated LISTEN connection.
	Conn *pgx.ConnConfig
	// Canary sends a canary (on the backend's pool).
	Canary CanarySender
	// Prepare runs on every new LISTEN connection before fences are trusted:
	// it installs or checks the triggers of the fenced tables. An error ends
	// the session; L1 stays off and the state says why (optional).
	Prepare func(ctx context.Context) error
	// QueueUsage reads pg_notification_queue_usage() (optional).
	QueueUsage func(ctx context.Context) (float64, error)
	// PingInterval and DeadAfter default to the constants above.
	PingInterval, DeadAfter time.Duration

	// ignoreFences drops every fence received, canaries aside: tests set
	// it to prove that their stale-entry checks can fail.
	ignoreFences bool
}

// ListenerStats are the listener's counters and gauges.
type ListenerStats struct {
	Reconnects    atomic.Int64  // LISTEN connections made after the first
	Notifications atomic.Int64  // notifications received
	BadPayloads   atomic.Int64  // notifications on the channel that were not fences
	NewerPayloads atomic.Int64  // fences of a payload version newer than this build's, taken as whole-cache fences
	LocalFences   atomic.Int64  // fence notifications applied from this instance's relay before their NOTIFY
	Echoes        atomic.Int64  // notifications skipped as the echo of a LocalFences one
	FenceLagNanos atomic.Int64  // the last canary's NOTIFY-to-receipt time
	QueueUsage    atomic.Uint64 // pg_notification_queue_usage() as float64 bits
}

// Listener holds one LISTEN connection and records the fences it receives.
type Listener struct {
	opts  ListenerOptions
	f     *Fences
	log   *zap.Logger
	id    string
	state atomic.Int32
	why   atomic.Pointer[string] // why it is not online, for /readyz

	Stats ListenerStats

	// hmu serializes the fences handled, from the connection and from
	// this instance's relay (applyLocal), and guards echo.
	hmu    sync.Mutex
	echo   map[string]time.Time // payloads applyLocal handled, by when, until their NOTIFY comes back
	pruned time.Time            // when echo was last pruned

	mu      sync.Mutex
	canary  string    // token of the canary in flight, "" when none
	sentAt  time.Time // when it was sent
	lastOK  time.Time // when the last canary came back
	proven  time.Time // when the last canary that came back was sent
	counter int
}

// NewListener returns a listener recording into f. Run starts it.
func NewListener(f *Fences, opts ListenerOptions, log *zap.Logger) *Listener {
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = DefaultDeadAfter
	}
	var b [8]byte
	rand.Read(b[:])
	l := &Listener{opts: opts, f: f, log: log, id: hex.EncodeToString(b[:])}
	l.setState(StateConnecting, "not connected yet")
	return l
}

// State returns where the listener is and, unless online, why.
func (l *Listener) State() (ListenerState, string) {
	s := ListenerState(l.state.Load())
	if s == StateOnline {
		return s, ""
	}
	return s, *l.why.Load()
}

func (l *Listener) setState(s ListenerState, why string) {
	l.why.Store(&why)
	l.state.Store(int32(s))
}

// Run listens until ctx ends, reconnecting with backoff. While it is not
// online, the Fences are offline and every L1 tier bypasses itself.
func (l *Listener) Run(ctx context.Context) {
	defer l.setState(StateStopped, "stopped")
	backoff := minBackoff
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			l.Stats.Reconnects.Add(1)
		}
		started := time.Now()
		err := l.session(ctx)
		l.f.SetOnline(false)
		if ctx.Err() != nil {
			return
		}
		l.setState(StateConnecting, err.Error())
		l.log.Warn("fence listener: L1 off until fences are received again", zap.Error(err))
		if time.Since(started) > maxBackoff {
			backoff = minBackoff // it was up for a while: retry soon
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// session is one LISTEN connection's life; it returns why it ended.
func (l *Listener) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.opts.Conn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if l.opts.Prepare != nil {
		if err := l.opts.Prepare(ctx); err != nil {
			return fmt.Errorf("prepare fenced tables: %w", err)
		}
	}
	l.setState(StateProving, "LISTEN is up; waiting for the first canary NOTIFY to come back")
	l.mu.Lock()
	l.canary = ""
	l.mu.Unlock()
	for {
		if err := l.tick(ctx); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, waitSlice)
		n, err := conn.WaitForNotification(wctx)
		quiet := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			l.Stats.Notifications.Add(1)
			l.received(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case quiet && !conn.PgConn().IsClosed():
			// A quiet second: pgx keeps the connection after a wait that
			// timed out. Look at the canary again.
		default:
			return fmt.Errorf("wait: %w", err)
		}
	}
}

// tick sends a canary when one is due and declares the connection dead when
// the one in flight is overdue.
func (l *Listener) tick(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	if l.canary != "" {
		overdue := now.Sub(l.sentAt) > l.opts.DeadAfter
		l.mu.Unlock()
		if overdue {
			return fmt.Errorf("canary NOTIFY not received within %v: fences may be lost (half-open connection, or a pooler or replica that does not deliver LISTEN)", l.opts.DeadAfter)
		}
		return nil
	}
	due := l.state.Load() != int32(StateOnline) || now.Sub(l.lastOK) >= l.opts.PingInterval
	if !due || l.opts.Canary == nil {
		l.mu.Unlock()
		return nil
	}
	l.counter++
	token := l.id + ":" + strconv.Itoa(l.counter)
	l.canary, l.sentAt = token, now
	l.mu.Unlock()

	nctx, cancel := context.WithTimeout(ctx, l.opts.DeadAfter)
	defer cancel()
	if err := l.opts.Canary(nctx, token); err != nil {
		// The send failed, so nothing is in flight: try again next tick,
		// and let the overdue rule not fire on a canary never sent.
		l.mu.Lock()
		l.canary = ""
		l.mu.Unlock()
		l.log.Debug("fence listener: canary NOTIFY failed", zap.Error(err))
	}
	if l.opts.QueueUsage != nil {
		if u, err := l.opts.QueueUsage(nctx); err == nil {
			l.Stats.QueueUsage.Store(floatBits(u))
		}
	}
	return nil
}

// received handles a notification from the connection, unless it is the
// echo of one applyLocal has handled.
func (l *Listener) received(msg string) {
	l.hmu.Lock()
	defer l.hmu.Unlock()
	if _, ok := l.echo[msg]; ok {
		delete(l.echo, msg)
		l.Stats.Echoes.Add(1)
		return
	}
	l.handle(msg)
}

// applyLocal handles the fence notifications this instance's relay has
// just taken from the log, before it publishes them. They are fences of
// committed writes, as the NOTIFY will be, so handling them now only
// spares this instance's tiers and tracking clients the publish and its
// delivery: the relay's commit, PostgreSQL waking the LISTEN backend, its
// send and this connection's read, each a wait for a CPU on a busy host.
// Each payload (made unique by its drain id, "d") is remembered until its
// NOTIFY comes back, and then skipped. An echo that never comes (the drain
// failed to commit, or this connection was lost) is forgotten after
// DeadAfter; a failed drain's rows are taken again by a later one, under a
// new id, and only fence the same keys twice.
//
// A drain that took the whole log also tells, in through, the time before
// which every committed fence has now been handled (Fences.AwaitOwnWrite).
func (l *Listener) applyLocal(payloads []string, through time.Time) {
	if len(payloads) > 0 {
		l.applyLocalFences(payloads)
	}
	if !through.IsZero() {
		l.f.heardThrough(through)
	}
}

func (l *Listener) applyLocalFences(payloads []string) {
	now := time.Now()
	l.hmu.Lock()
	defer l.hmu.Unlock()
	if l.echo == nil {
		l.echo = make(map[string]time.Time)
	}
	if now.Sub(l.pruned) > l.opts.DeadAfter {
		for p, at := range l.echo {
			if now.Sub(at) > l.opts.DeadAfter {
				delete(l.echo, p)
			}
		}
		l.pruned = now
	}
	for _, p := range payloads {
		l.echo[p] = now
		l.handle(p)
	}
	l.Stats.LocalFences.Add(int64(len(payloads)))
}

// handle records the fences of a notification (see PayloadVersion), and
// tells the tiers watching their table once they are recorded. l.hmu is
// held.
func (l *Listener) handle(msg string) {
	fe, known, err := readPayload(msg)
	if err != nil {
		// Something else uses the channel: to be safe, fence everything.
		l.Stats.BadPayloads.Add(1)
		l.f.fenceAllFrom(time.Time{})
		return
	}
	at := fe.at()
	if !known {
		// A newer build's relay: what it fences cannot be read here, so
		// fence everything; its canary still proves the path.
		l.Stats.NewerPayloads.Add(1)
		l.f.fenceAllFrom(at)
		if fe.Canary != "" {
			l.canaryBack(fe.Canary)
		}
		return
	}
	if fe.Through != 0 {
		defer l.f.heardThrough(time.UnixMicro(fe.Through))
	}
	switch {
	case fe.Canary != "":
		l.canaryBack(fe.Canary)
	case strings.HasPrefix(fe.Table, expiredPrefix):
		l.expired(fe, at)
	case l.opts.ignoreFences:
	case fe.Table == "":
		l.Stats.BadPayloads.Add(1)
		l.f.fenceAllFrom(at)
	case fe.Keys == nil:
		l.f.fenceTableFrom(fe.Table, at)
	default:
		keys := make([]string, len(fe.Keys))
		for i, k := range fe.Keys {
			key, err := fence.KeyOf(k)
			if err != nil {
				l.f.fenceTableFrom(fe.Table, at)
				return
			}
			keys[i] = key
		}
		l.f.fenceKeysFrom(fe.Table, keys, at)
	}
}

// expired tells the tiers of a table the keys a sweep deleted as expired
// (expired.go): not fences, which the DELETE's triggers logged. A key too
// long to publish leaves none to tell. l.hmu is held.
func (l *Listener) expired(fe payload, at time.Time) {
	keys := make([]string, 0, len(fe.Keys))
	for _, k := range fe.Keys {
		if key, err := fence.KeyOf(k); err == nil {
			keys = append(keys, key)
		}
	}
	if len(keys) > 0 {
		l.f.tell(fe.Table, fenceNote{keys: keys, at: at})
	}
}

// Proven returns a time before which every fence logged has been received:
// the send time of the last canary that came back, since the relay
// publishes a canary only after every fence logged before it.
func (l *Listener) Proven() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.proven
}

// canaryBack notes our canary's return; the first one after a (re)connect
// turns L1 on, through a whole-cache fence.
func (l *Listener) canaryBack(token string) {
	l.mu.Lock()
	if token != l.canary {
		l.mu.Unlock()
		return // another instance's canary, or one from an older connection
	}
	now := time.Now()
	l.Stats.FenceLagNanos.Store(int64(now.Sub(l.sentAt)))
	l.canary, l.lastOK, l.proven = "", now, l.sentAt
	l.f.proven.Store(l.sentAt.UnixNano())
	l.mu.Unlock()
	if l.state.Load() != int32(StateOnline) {
		l.f.SetOnline(true)
		l.setState(StateOnline, "")
		l.log.Info("fence listener online: L1 in use")
	}
}
