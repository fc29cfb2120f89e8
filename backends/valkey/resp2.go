package valkey

import (
	"context"
	"fmt"
	"sync"

	"github.com/valkey-io/valkey-go"
)

// resp2Client is the driver's second valkey-go client, made with
// AlwaysRESP2, through which the requests of clients speaking RESP2 are
// passed on (coll.go): the server answers them in RESP2's shapes. It has
// the driver's options (addresses, credentials, TLS, timeouts, connections
// per node) but no client cache, which needs RESP3. It is made on first
// use, by one caller while the others wait for it, and closed with the
// driver; a failed attempt is made again by the next call.
type resp2Client struct {
	mu     sync.Mutex
	c      *client
	making chan struct{} // closed when the attempt in progress ends
	err    error         // why the last attempt failed
}

// resp2 returns the RESP2 client, making it if need be. cctx bounds the
// wait; ctx and op name the call, as begin's do.
func (d *Driver) resp2(cctx, ctx context.Context, op string) (*client, error) {
	r := &d.r2
	r.mu.Lock()
	if c := r.c; c != nil {
		r.mu.Unlock()
		return c, nil
	}
	if r.making == nil {
		r.making = make(chan struct{})
		go d.makeResp2(r.making)
	}
	wait := r.making
	r.mu.Unlock()
	select {
	case <-wait:
	case <-cctx.Done():
		return nil, d.fail(ctx, op, fmt.Errorf("connecting in RESP2: %w", cctx.Err()))
	}
	r.mu.Lock()
	c, err := r.c, r.err
	r.mu.Unlock()
	if c == nil {
		return nil, d.fail(ctx, op, fmt.Errorf("connecting in RESP2: %w", err))
	}
	return c, nil
}

// makeResp2 makes the RESP2 client and closes done. A driver closed
// meanwhile closes it at once: Close looks for it under d.mu, which is
// held while it is stored.
func (d *Driver) makeResp2(done chan struct{}) {
	defer close(done)
	opt, err := d.opts.clientOption()
	var vc valkey.Client
	if err == nil {
		opt.AlwaysRESP2, opt.DisableCache = true, true
		vc, err = valkey.NewClient(opt)
	}
	r := &d.r2
	d.mu.Lock()
	closed := d.closed
	r.mu.Lock()
	switch {
	case err != nil:
		r.err = err
	case closed:
		r.err = errClosed
	default:
		r.c, r.err = &client{Client: vc, cluster: vc.Mode() == valkey.ClientModeCluster}, nil
	}
	r.making = nil
	r.mu.Unlock()
	d.mu.Unlock()
	if err == nil && closed {
		vc.Close()
	}
}

// closeResp2 closes the RESP2 client, if one was made; the driver is
// closed (d.closed is set).
func (d *Driver) closeResp2() {
	r := &d.r2
	r.mu.Lock()
	c := r.c
	r.c = nil
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
}
