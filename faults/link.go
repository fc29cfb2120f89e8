package faults

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// heardKeep is how much of what a client sent a Link keeps, for Stall to
// pick connections by what they said: enough for a PostgreSQL startup
// packet and the first statements.
const heardKeep = 64 << 10

// Link is a TCP relay from a 127.0.0.1 port of its own to a target
// address. Each connection made to it is forwarded to the target byte for
// byte, until the test stalls it: from then on nothing more is forwarded in
// either direction, and neither socket is closed, not even when one end
// closes its own. To both ends the connection is then half-open: up, and
// silent. That is what a peer that vanished without a FIN or a RST (a
// pulled cable, a NAT or firewall that forgot the flow) looks like until
// TCP keepalives notice, which by default takes over two hours.
type Link struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[*linkConn]struct{}
	closed bool
}

// linkConn is one relayed connection.
type linkConn struct {
	client, server net.Conn

	// mu is held while a chunk is written on, so that once Stall has set
	// stalled no byte moves: a write in progress finishes first.
	mu      sync.Mutex
	stalled bool
	heard   []byte        // the first heardKeep bytes the client sent
	done    chan struct{} // closed by Link.Close, which a stalled pipe waits for
	once    sync.Once
}

// NewLink listens on a free 127.0.0.1 port and relays to target.
func NewLink(target string) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	l := &Link{ln: ln, target: target, conns: map[*linkConn]struct{}{}}
	l.wg.Go(l.accept)
	return l, nil
}

// Addr is the address to connect to instead of the target.
func (l *Link) Addr() string { return l.ln.Addr().String() }

func (l *Link) accept() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &linkConn{client: client, server: server, done: make(chan struct{})}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.close()
			return
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Go(func() { l.pipe(c, c.server, c.client, true) })
		l.wg.Go(func() { l.pipe(c, c.client, c.server, false) })
	}
}

// pipe copies src to dst until either end closes or the connection is
// stalled; then it waits for Close without closing anything itself.
func (l *Link) pipe(c *linkConn, dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c.mu.Lock()
			if fromClient && len(c.heard) < heardKeep {
				c.heard = append(c.heard, buf[:min(n, heardKeep-len(c.heard))]...)
			}
			stalled := c.stalled
			var werr error
			if !stalled {
				_, werr = dst.Write(buf[:n])
			}
			c.mu.Unlock()
			if stalled {
				break
			}
			if werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	stalled := c.stalled
	c.mu.Unlock()
	if stalled {
		<-c.done // keep the other end's socket open: it must learn nothing
		return
	}
	// An ordinary end: the relay passes the close on, as a router would.
	c.close()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

func (c *linkConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
	})
}

// Stall stops forwarding on every open connection whose client has sent
// something match accepts (match sees the first bytes the client sent),
// and returns how many it stalled. Stalled connections stay open, silent
// in both directions, until Close.
func (l *Link) Stall(match func(heard []byte) bool) int {
	l.mu.Lock()
	conns := make([]*linkConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		if !c.stalled && match(c.heard) {
			c.stalled = true
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// Conns is how many connections are being relayed or held stalled.
func (l *Link) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Close stops listening, closes both sockets of every connection, stalled
// ones included, and waits for its goroutines.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	err := l.ln.Close()
	for c := range conns {
		c.close()
	}
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
