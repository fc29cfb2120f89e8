package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/route"
	"github.com/pgcache/pgcache/tracking"
)

// Sizes of a connection's output buffer.
const (
	outBufSize = 16 << 10 // what an idle connection holds
	maxIdleOut = 1 << 20  // a buffer grown past this is dropped once flushed
	// flushAt is how much reply may pile up in a batch before it is pushed
	// to the socket; past it the output limit is checked.
	flushAt = 64 << 10
)

var (
	errOutputLimit = errors.New("output buffer limit reached")
	errShutdown    = errors.New("server shutting down")
	errDone        = errors.New("connection done") // ends it without a log line
	errIdle        = errors.New("idle past resp.idle_timeout")
)

// probeAfter bounds how long a wait that may have missed the client's end
// of stream lasts before the connection reads again to look (see runFD).
const probeAfter = 250 * time.Millisecond

// conn is one client. Its goroutine runs serve: read what has arrived,
// run every complete request in it (a pipelined batch) with the route
// table acquired once, append the replies to out, and write them in one go.
type conn struct {
	s  *Server
	nc net.Conn
	id int64

	rd     *reader
	out    []byte
	outOff int // out[:outOff] has been written

	proto  int    // 2, or 3 after HELLO 3
	name   string // CLIENT SETNAME
	authed bool   // AUTH succeeded, or auth was off when the client came

	t       *route.Table // during a batch
	release func()
	quit    bool  // close once the replies are written (QUIT, protocol error)
	failed  error // close without writing more (output limit, write error)

	holdOutput int // > 0: replies are kept in out, not drained (see atomically)

	readyAt time.Time // when the last wait began, with IdleTimeout set
	probing bool      // a probeAfter deadline is armed, IdleTimeout unset

	group      group     // pipelined GETs or SETs run as one backend call, see group.go
	tx                   // MULTI's queue, WATCH's keys, an EXEC's atomic run: see cmd_multi.go
	scripting  scriptRun // EVAL's and FCALL's: see cmd_scripting.go
	scratch              // reused by the multi-key commands
	rawConn              // writes that do not wait, see writeNow
	introspect           // commandstats, CLIENT LIST, CLIENT REPLY: see cmdstats.go, cmd_client.go

	// ctx is the server's, marked as this connection's writes
	// (changes.WithWriter, for NOLOOP), and ended when the connection
	// closes or is killed: a script the client runs stops then.
	ctx     context.Context
	cancel  context.CancelFunc
	track   *tracking.Client          // CLIENT TRACKING; nil when off (tracking.go)
	caching bool                      // CLIENT CACHING given for the next command
	push    pushQueue                 // invalidations from other goroutines: see push.go
	subs    subscriptions             // SUBSCRIBE's channels and the others: see cmd_pubsub.go
	unblock atomic.Pointer[chan bool] // while a command is blocked: CLIENT UNBLOCK's way in (blocking.go)
	probeAt time.Time                 // when an armed probe fires
}

// newConn returns a client. As in Redis, a client that connects while auth
// is off is authenticated for good: turning auth on by a reload makes new
// clients AUTH, not those already served.
func newConn(s *Server, nc net.Conn, id int64) *conn {
	c := &conn{s: s, nc: nc, id: id, proto: 2, authed: !s.users.Load().RESP()}
	c.ctx, c.cancel = context.WithCancel(changes.WithWriter(s.ctx, id))
	c.push.proto.Store(2)
	c.initSeen()
	return c
}

// init allocates the connection's buffers, on its own goroutine: a client
// refused at MaxClients never costs them.
func (c *conn) init() {
	c.out = make([]byte, 0, outBufSize)
	c.rd = newReader(readerLimits(c.s.config()))
	c.initRaw()
}

func readerLimits(cfg *Config) limits {
	return limits{
		maxBulk:   cfg.MaxBulkBytes,
		maxInline: cfg.MaxInlineBytes,
		maxMulti:  cfg.MaxMultibulkLen,
		maxQuery:  cfg.MaxQueryBytes,
	}
}

// mustAuth reports whether the client has to AUTH before running commands.
// It is asked each time rather than kept: a reload that turns auth off lets
// waiting clients in, as CONFIG SET requirepass "" does in Redis.
func (c *conn) mustAuth() bool { return !c.authed && c.s.users.Load().RESP() }

// serve runs the connection until the client leaves, breaks the protocol,
// or the server shuts down. A panic in a handler ends this connection only.
func (c *conn) serve() {
	defer c.s.forget(c)
	defer c.unwatchAll()
	defer c.endTracking()
	defer c.endSubscriptions()
	defer func() {
		if p := recover(); p != nil {
			c.s.stats.Panics.Add(1)
			c.s.log.Error("panic serving a client; closing its connection",
				zap.Int64("client", c.id), zap.String("addr", c.nc.RemoteAddr().String()),
				zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		}
	}()
	c.init()
	c.logClose(c.run())
}

// runConn serves the client through net.Conn: read what has arrived, serve
// it, and again. A read that finds nothing waits for more.
func (c *conn) runConn() error {
	for {
		if err := c.read(); err != nil {
			return err
		}
		if err := c.serveBatch(); err != nil {
			return err
		}
	}
}

// serveBatch runs the requests one read brought and writes their replies.
// It returns errDone when the connection is to end quietly (QUIT, a
// protocol error already answered, shutdown).
func (c *conn) serveBatch() error {
	// Limits are taken per batch, so a reload reaches every client.
	c.rd.limits = readerLimits(c.s.config())
	c.rd.maxBulk = c.s.maxBulk()
	c.rd.unauth = c.mustAuth()
	c.batch()
	if c.failed != nil {
		return c.failed
	}
	if c.quit {
		// Gone for the other clients before this one reads its last reply,
		// as Redis frees a client that QUIT before it serves anyone else:
		// a tracking redirect to it is broken from then on.
		c.s.unlist(c)
	}
	if err := c.flush(); err != nil {
		return err
	}
	if c.quit || c.s.closing.Load() {
		return errDone
	}
	c.rd.shrink()
	return nil
}

// ready is called before waiting for the client's next requests: it arms
// the read deadline and says whether the server is shutting down. unsure
// says the wait may begin with the client's end of stream unread (see
// runFD): the deadline is then at most probeAfter away, so the connection
// looks again rather than wait for good.
//
// closing is checked after the deadline is set: Shutdown sets closing and
// then moves every deadline to the past, so either this sees closing or
// the wait that follows sees Shutdown's deadline, never neither.
func (c *conn) ready(unsure bool) error {
	idle := c.s.config().IdleTimeout
	switch {
	case idle > 0:
		c.readyAt = time.Now()
		d := idle
		if unsure {
			d = min(d, probeAfter)
		}
		if err := c.nc.SetReadDeadline(c.readyAt.Add(d)); err != nil {
			return err
		}
	case unsure && !c.probing:
		// One probe covers every wait until it fires: a busy client arms
		// it once per probeAfter, not once per request.
		c.probeAt = time.Now().Add(probeAfter)
		if err := c.nc.SetReadDeadline(c.probeAt); err != nil {
			return err
		}
		c.probing = true
	}
	if c.s.closing.Load() {
		return errShutdown
	}
	return c.flushPushes()
}

// deadlinePassed handles a wait that ended at its read deadline: the
// server shutting down, the client idle past IdleTimeout (both end the
// connection), or a probe, after which the wait is resumed with the
// deadline the idle timeout asks for, or none.
func (c *conn) deadlinePassed() error {
	if c.s.closing.Load() {
		return errShutdown
	}
	var at time.Time
	if idle := c.s.config().IdleTimeout; idle > 0 {
		if time.Since(c.readyAt) >= idle {
			return errIdle
		}
		at = c.readyAt.Add(idle)
	}
	// A push's wake-up (push.go) may come before a probe fires: the probe
	// stays armed.
	if c.probing && time.Now().Before(c.probeAt) {
		if at.IsZero() || c.probeAt.Before(at) {
			at = c.probeAt
		}
	} else {
		c.probing = false
	}
	if err := c.nc.SetReadDeadline(at); err != nil {
		return err
	}
	if c.s.closing.Load() { // as in ready: Shutdown may have come between
		return errShutdown
	}
	return c.flushPushes()
}

// read waits for more of the client's requests. A wait that reaches its
// deadline (a push's wake-up, or the idle timeout) is deadlinePassed's.
func (c *conn) read() error {
	if err := c.ready(false); err != nil {
		return err
	}
	for {
		n, err := c.rd.fill(c.nc)
		if n > 0 {
			return nil // an error comes back on the next read, after these are served
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if err := c.deadlinePassed(); err != nil {
				return err
			}
			continue
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
}

// batch runs every complete request in the read buffer.
func (c *conn) batch() {
	defer c.endBatch()
	var n int64
	for {
		args, err := c.rd.next()
		if err != nil {
			c.endGroup()
			c.protocolError(err)
			break
		}
		if args == nil {
			break
		}
		if c.t == nil {
			c.t, c.release = c.s.router.Acquire()
		}
		n++
		cmd := lookup(commands, args[0])
		if c.join(cmd, args) {
			c.caching = false
			continue
		}
		mark, muted := len(c.out), c.mute != 0
		if muted { // CLIENT REPLY OFF or SKIP: mark must stay valid
			c.holdOutput++
		}
		c.exec(cmd, args)
		c.settle()
		if muted {
			c.holdOutput--
		}
		if c.caching && c.multi == nil && cmd != clientCmd {
			c.caching = false // CLIENT CACHING covers the next command, or a transaction
		}
		if c.mute != 0 {
			c.afterMuted(mark)
		}
		if c.pending() > flushAt {
			c.room(0)
		}
		if c.quit || c.failed != nil {
			break
		}
	}
	c.s.stats.CommandsProcessed.Add(n)
}

func (c *conn) endBatch() {
	c.endGroup()
	c.s.tracking.EndBatch() // the batch's writes, to BCAST clients
	c.flushTally()
	c.publish()
	if c.release != nil {
		c.release()
	}
	c.t, c.release = nil, nil
}

// exec runs one request; cmd is its command, nil when there is none.
// Inside MULTI a request is queued instead, and a request refused here
// makes the EXEC fail (Redis's flagTransaction).
func (c *conn) exec(cmd *command, args [][]byte) {
	if cmd == nil {
		c.refuse(errUnknownCommand(args))
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		sub := lookup(cmd.subs, args[1])
		if sub == nil {
			c.refuse(errUnknownSubcommand(cmd.name, args[1]))
			return
		}
		cmd = sub
	}
	c.lastCmd = cmd // queued or refused, it is the client's last command, as in Redis
	if !cmd.arityOK(len(args)) {
		c.statsOf(cmd).rejected.Add(1)
		c.refuse(cmd.arityErr)
		return
	}
	// After the name and arity checks, as Redis 7 does.
	if !cmd.noAuth && c.mustAuth() {
		c.statsOf(cmd).rejected.Add(1)
		c.refuse(errNoAuth)
		return
	}
	if c.proto == 2 && !cmd.inPubSub && c.subs.any() {
		c.refuse(errPubSubContext(cmd))
		return
	}
	if c.multi != nil && !cmd.noQueue {
		c.queue(cmd, args)
		return
	}
	c.call(cmd, args)
}

// refuse answers a request refused before it ran; inside MULTI the
// transaction then fails at EXEC.
func (c *conn) refuse(msg string) {
	if c.multi != nil {
		c.multi.aborted = true
	}
	c.writeError(msg)
}

// protocolError answers a malformed request as Redis does and has the
// connection closed once the replies before it are written.
func (c *conn) protocolError(err error) {
	c.quit = true
	var pe *protoError
	if !errors.As(err, &pe) || pe == errQueryLimit {
		c.s.stats.QueryLimitDisconnects.Add(1)
		c.failed = err
		return
	}
	c.s.stats.ProtocolErrors.Add(1)
	c.writeError(pe.reply)
	c.s.log.Debug("protocol error", zap.Int64("client", c.id), zap.String("error", pe.reply))
}

// pending is how many reply bytes the client has not been sent yet.
func (c *conn) pending() int { return len(c.out) - c.outOff }

// room is called before n more bytes of reply are appended mid-batch. It
// pushes what the socket takes without waiting, and fails the connection
// when the replies the client has not taken would pass the output limit: a
// client that pipelines reads of large values and never reads the replies
// costs at most OutputBufferLimit, then is disconnected (Redis's
// client-output-buffer-limit, as a hard limit).
func (c *conn) room(n int) bool {
	if c.failed != nil {
		return false
	}
	if c.pending()+n <= flushAt {
		return true
	}
	if c.holdOutput == 0 { // an atomic run may take its replies back
		c.drain()
		if c.failed != nil {
			return false
		}
	}
	if limit := c.s.config().OutputBufferLimit; int64(c.pending()+n) > limit {
		c.s.stats.OutputLimitDisconnects.Add(1)
		c.failed = errOutputLimit
		c.s.log.Warn("closing a client over the output buffer limit",
			zap.Int64("client", c.id), zap.String("addr", c.nc.RemoteAddr().String()),
			zap.Int64("limit", limit))
		return false
	}
	return true
}

// drain writes what the socket takes now.
func (c *conn) drain() {
	c.drains++
	n, err := c.writeNow(c.out[c.outOff:])
	c.outOff += n
	if err != nil {
		c.failed = err
		return
	}
	switch {
	case c.outOff == len(c.out):
		c.out, c.outOff = c.out[:0], 0
	case c.outOff > len(c.out)/2:
		c.out = c.out[:copy(c.out, c.out[c.outOff:])]
		c.outOff = 0
	}
}

// flush writes the batch's replies, waiting for the client to take them.
// Most often the socket takes them at once: that write sets no deadline.
func (c *conn) flush() error {
	if c.pending() > 0 && c.nonBlocking() {
		c.drain()
		if c.failed != nil {
			return c.failed
		}
	}
	if c.pending() > 0 {
		d := c.s.config().WriteTimeout
		if d > 0 {
			if err := c.nc.SetWriteDeadline(time.Now().Add(d)); err != nil {
				return err
			}
		}
		_, err := c.nc.Write(c.out[c.outOff:])
		if d > 0 {
			c.nc.SetWriteDeadline(time.Time{}) // drain's writes must not see a stale deadline
		}
		if err != nil {
			return err
		}
	}
	c.out, c.outOff = c.out[:0], 0
	if cap(c.out) > maxIdleOut {
		c.out = make([]byte, 0, outBufSize)
	}
	return nil
}

// writeWaiting is writeNow where the socket cannot be written without
// waiting (TLS): it waits up to WriteTimeout, so a client that does not
// read is dropped then rather than holding its connection for good.
func (c *conn) writeWaiting(p []byte) (int, error) {
	if d := c.s.config().WriteTimeout; d > 0 {
		if err := c.nc.SetWriteDeadline(time.Now().Add(d)); err != nil {
			return 0, err
		}
		defer c.nc.SetWriteDeadline(time.Time{})
	}
	return c.nc.Write(p)
}

// logClose notes why a connection ended, at debug level: clients leaving
// is routine.
func (c *conn) logClose(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, errShutdown),
		errors.Is(err, errDone):
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.s.closing.Load() {
			return
		}
	}
	c.s.log.Debug("closing client", zap.Int64("client", c.id), zap.Error(err))
}

// key resolves a key to its route and the key as the route's backend
// stores it, or answers "no route" and returns nil.
func (c *conn) key(k []byte) (*route.Route, string) {
	r, stored := c.t.ForKey(bstr(k))
	if r == nil {
		c.writeError(errNoRoute(k))
	}
	return c.viewOf(r), stored // inside an atomic run: its view of the route
}

// backendErr answers a failed backend call.
func (c *conn) backendErr(r *route.Route, err error) {
	if errors.Is(err, backends.ErrBusy) {
		c.writeError(c.busyReply())
		return
	}
	if !backends.ClientCaused(err) {
		c.s.log.Debug("backend error", zap.String("route", r.Name), zap.Error(err))
	}
	c.writeError(backendError(r, err))
}
