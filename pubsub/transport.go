package pubsub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Envelope is a message between instances.
type Envelope struct {
	Shard   bool // SPUBLISH, not PUBLISH
	Channel string
	Payload []byte
}

// Transport carries messages between the pgcache instances that share a
// store. Each instance has one; a transport never hands an instance the
// messages it sent itself.
type Transport interface {
	// Send publishes msgs to the other instances, in order.
	Send(ctx context.Context, msgs []Envelope) error
	// Receive calls deliver for each message another instance sent, in
	// the order that instance sent them, until ctx ends or the connection
	// fails (its error).
	Receive(ctx context.Context, deliver func(Envelope)) error
	// Close releases what the transport holds.
	Close() error
}

// Carrier is a backend driver that can carry messages between instances:
// PostgreSQL's and Valkey's. The transport it makes has connections of its
// own, closed with it, so it outlives a reload that replaces the driver.
// prefix names Valkey's channels ("": DefaultValkeyPrefix).
type Carrier interface {
	PubSubTransport(prefix string) (Transport, error)
}

// Bounds of the queue of messages waiting to go to the other instances:
// past either, a message is dropped (and counted), so a transport that is
// slow or down costs a publisher nothing but the messages.
const (
	maxQueued      = 1 << 16
	maxQueuedBytes = 64 << 20
	maxBatch       = 256 // messages a Send takes at most
)

// Stats count what went between instances.
type Stats struct {
	Sent     atomic.Int64 // messages handed to the transport
	Received atomic.Int64 // messages from other instances delivered here
	Dropped  atomic.Int64 // messages dropped: the queue was full
	Failed   atomic.Int64 // messages a Send failed to publish
}

// outbox is the queue of messages for the other instances and the
// goroutines that send and receive them.
type outbox struct {
	t     Transport
	log   *zap.Logger
	stats *Stats

	mu     sync.Mutex
	queue  []Envelope
	bytes  int
	wake   chan struct{}
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Attach connects b to the other instances through t, until Close. It
// must be called before b serves.
func (b *Broker) Attach(t Transport, log *zap.Logger) *Stats {
	ctx, cancel := context.WithCancel(context.Background())
	o := &outbox{t: t, log: log, stats: new(Stats), wake: make(chan struct{}, 1), cancel: cancel}
	b.out = o
	o.done.Add(2)
	go o.sendLoop(ctx)
	go o.receiveLoop(ctx, b)
	return o.stats
}

// Close stops the transport, if any: messages still queued are dropped.
func (b *Broker) Close() error {
	if b.out == nil {
		return nil
	}
	b.out.cancel()
	b.out.done.Wait()
	return b.out.t.Close()
}

func (o *outbox) send(e Envelope) {
	o.mu.Lock()
	if len(o.queue) >= maxQueued || o.bytes+len(e.Payload) > maxQueuedBytes {
		o.mu.Unlock()
		o.stats.Dropped.Add(1)
		return
	}
	o.queue = append(o.queue, e)
	o.bytes += len(e.Payload)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// take removes up to maxBatch messages from the queue.
func (o *outbox) take() []Envelope {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(len(o.queue), maxBatch)
	batch := make([]Envelope, n)
	copy(batch, o.queue)
	for _, e := range batch {
		o.bytes -= len(e.Payload)
	}
	clear(o.queue[:n])
	o.queue = o.queue[n:]
	if len(o.queue) == 0 {
		o.queue = nil // let a burst's array go
	}
	return batch
}

func (o *outbox) sendLoop(ctx context.Context) {
	defer o.done.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		}
		for batch := o.take(); len(batch) > 0; batch = o.take() {
			if err := o.t.Send(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return
				}
				o.stats.Failed.Add(int64(len(batch)))
				o.log.Warn("pubsub: publishing to the other instances failed", zap.Int("messages", len(batch)), zap.Error(err))
				continue
			}
			o.stats.Sent.Add(int64(len(batch)))
		}
	}
}

// receiveLoop runs the transport's Receive until Close, again after each
// failure, after a pause that grows to 5 s.
func (o *outbox) receiveLoop(ctx context.Context, b *Broker) {
	defer o.done.Done()
	pause := 100 * time.Millisecond
	for {
		start := time.Now()
		err := o.t.Receive(ctx, func(e Envelope) {
			kind := Channel
			if e.Shard {
				kind = Shard
			}
			o.stats.Received.Add(1)
			b.deliver(kind, e.Channel, e.Payload)
		})
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			pause = 100 * time.Millisecond
		}
		o.log.Warn("pubsub: receiving from the other instances failed; retrying", zap.Duration("in", pause), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}
