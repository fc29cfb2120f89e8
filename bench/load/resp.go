package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the RESP driver: 32 connections of 8 requests in flight each
// keep 256 requests outstanding, about vegeta's 250 workers.
const (
	DefaultRESPConns    = 32
	DefaultRESPPipeline = 8
	DefaultRESPTimeout  = 10 * time.Second // one reply, and the dial
	respBufSize         = 64 << 10
	maxPipeline         = 1024 // the most requests one connection keeps in flight
)

// RESP drives pgcache's RESP front: Conns connections, each with up to
// Pipeline requests written ahead of their replies (Redis pipelining). A
// connection writes whatever it may send as one batch and reads replies in
// order; each request's latency runs from the write of its batch to its
// reply.
type RESP struct {
	Addr     string // host:port of the RESP front
	Conns    int
	Pipeline int
	Timeout  time.Duration
}

// Proto is "resp".
func (d *RESP) Proto() string { return "resp" }

// Shape describes the load.
func (d *RESP) Shape() string {
	c, p, _ := d.limits()
	return fmt.Sprintf("%d connections x pipeline %d", c, p)
}

func (d *RESP) limits() (conns, pipeline int, timeout time.Duration) {
	conns, pipeline, timeout = d.Conns, d.Pipeline, d.Timeout
	if conns <= 0 {
		conns = DefaultRESPConns
	}
	if pipeline <= 0 {
		pipeline = DefaultRESPPipeline
	}
	pipeline = min(pipeline, maxPipeline)
	if timeout <= 0 {
		timeout = DefaultRESPTimeout
	}
	return conns, pipeline, timeout
}

// Run runs one phase. Every connection is opened first: a front that is
// not there fails the phase at once rather than counting errors.
func (d *RESP) Run(ctx context.Context, p Plan, prog *Progress) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	nconns, depth, timeout := d.limits()
	conns := make([]*respConn, 0, nconns)
	defer func() {
		for _, c := range conns {
			c.conn.Close()
		}
	}()
	dialer := net.Dialer{Timeout: timeout}
	for range nconns {
		nc, err := dialer.DialContext(ctx, "tcp", d.Addr)
		if err != nil {
			return nil, fmt.Errorf("%s: resp: %w", p.Name, err)
		}
		conns = append(conns, newRESPConn(nc, depth, timeout))
	}

	start := time.Now()
	rec := newRecorder(start)
	phase, cancel := context.WithDeadline(ctx, start.Add(p.Duration))
	defer cancel()
	stopProgress := prog.watch(&p, rec)
	var next atomic.Uint64
	var wg sync.WaitGroup
	for _, c := range conns {
		sh := rec.shard()
		wg.Go(func() { c.write(phase, &p, &next) })
		wg.Go(func() { c.read(&p, sh) })
	}
	wg.Wait()
	stopProgress()
	out := rec.result()
	out.Interrupted = interrupted(ctx)
	return out, nil
}

// respConn is one pipelined connection: a writer goroutine sends batches,
// a reader goroutine matches replies to requests in order.
type respConn struct {
	conn    net.Conn
	br      *bufio.Reader
	timeout time.Duration

	// slots holds a token per request in flight: the writer waits for room
	// here, so no more than its capacity are ever outstanding.
	slots chan struct{}
	// sent queues each request in flight, in wire order; the writer closes
	// it when it stops. Its capacity is the slots', so the writer never
	// blocks on it.
	sent chan inflight

	failOnce sync.Once
	broken   chan struct{} // closed by fail
	err      error         // why, set before broken is closed
}

func newRESPConn(nc net.Conn, depth int, timeout time.Duration) *respConn {
	return &respConn{
		conn:    nc,
		br:      bufio.NewReaderSize(nc, respBufSize),
		timeout: timeout,
		slots:   make(chan struct{}, depth),
		sent:    make(chan inflight, depth),
		broken:  make(chan struct{}),
	}
}

// inflight is a request sent and not yet answered.
type inflight struct {
	at   time.Time // when its batch was written
	size int       // its bytes on the wire
}

// fail marks the connection broken and closes it, which unblocks both
// goroutines; the reader counts what was in flight as failed.
func (c *respConn) fail(err error) {
	c.failOnce.Do(func() {
		c.err = err
		close(c.broken)
		c.conn.Close()
	})
}

// write sends requests until the plan's count runs out, ctx ends or the
// connection breaks. Each round waits for one free slot, takes every other
// free slot without waiting, and writes that many requests at once.
func (c *respConn) write(ctx context.Context, p *Plan, next *atomic.Uint64) {
	defer close(c.sent)
	buf := make([]byte, 0, respBufSize)
	depth := cap(c.slots)
	sizes := make([]int, depth)
	for ctx.Err() == nil {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return
		case <-c.broken:
			return
		}
		n := 1
	more:
		for n < depth {
			select {
			case c.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		buf = buf[:0]
		took := 0
		for ; took < n; took++ {
			i := next.Add(1) - 1
			if p.Requests > 0 && i >= p.Requests {
				break
			}
			before := len(buf)
			k := int(i % uint64(len(p.Keys)))
			if p.Op == Set {
				buf = appendSet(buf, p.Keys[k], p.Value(k))
			} else {
				buf = appendGet(buf, p.Keys[k])
			}
			sizes[took] = len(buf) - before
		}
		for range n - took {
			<-c.slots
		}
		if took == 0 {
			return
		}
		now := time.Now()
		for j := range took {
			c.sent <- inflight{at: now, size: sizes[j]}
		}
		c.conn.SetWriteDeadline(now.Add(c.timeout))
		if _, err := c.conn.Write(buf); err != nil {
			c.fail(err)
			return
		}
	}
}

// read takes one reply per request sent, in order, and records it. After
// the connection breaks it records the rest as failed without reading.
func (c *respConn) read(p *Plan, sh *shard) {
	for req := range c.sent {
		at, out := req.at, uint64(req.size)
		select {
		case <-c.broken:
			sh.record(at, time.Since(at), "error", false, c.err.Error(), 0, out)
			<-c.slots
			continue
		default:
		}
		// A deadline per network read, not per reply: replies already
		// buffered need none.
		if c.br.Buffered() == 0 {
			c.conn.SetReadDeadline(time.Now().Add(c.timeout))
		}
		r, err := readReply(c.br)
		lat := time.Since(at)
		switch {
		case err != nil:
			if errors.Is(err, net.ErrClosed) {
				err = errors.New("connection closed")
			}
			c.fail(fmt.Errorf("resp: %w", err))
			sh.record(at, lat, "error", false, c.err.Error(), uint64(r.size), out)
		case r.kind == replyError:
			sh.record(at, lat, r.kind.code(), false, r.text, uint64(r.size), out)
		default:
			ok := p.Op == Set && r.kind == replyStatus && r.text == "OK" ||
				p.Op == Get && r.kind == replyBulk
			errText := ""
			if !ok {
				errText = "unexpected " + r.kind.code() + " reply to " + p.Op.String()
			}
			sh.record(at, lat, r.kind.code(), ok, errText, uint64(r.size), out)
		}
		<-c.slots
	}
}
