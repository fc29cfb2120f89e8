// Package pubsub is Redis's publish/subscribe for pgcache: the channels,
// patterns and shard channels this process's clients subscribed to, and
// the messages between pgcache instances that share a PostgreSQL or a
// Valkey (Transport).
//
// A message published here reaches this process's subscribers at once, in
// the order it was published, and goes to the other instances through the
// transport, where each instance hands it to its own subscribers in the
// order the publisher's instance sent it. As in Redis, delivery is at most
// once: a subscriber that cannot keep up is dropped by its connection
// (client-output-buffer-limit pubsub), never waited for, and a message in
// flight while the transport is down is lost.
package pubsub

import (
	"slices"
	"sync"

	"github.com/pgcache/pgcache/internal/glob"
)

// Kind is what a subscription names.
type Kind uint8

const (
	Channel Kind = iota // SUBSCRIBE, PUBLISH: "message"
	Pattern             // PSUBSCRIBE: "pmessage"
	Shard               // SSUBSCRIBE, SPUBLISH: "smessage"
)

// Message is one delivery to a subscriber.
type Message struct {
	Kind    Kind   // Channel, Pattern (matched Pattern), or Shard
	Pattern string // the pattern that matched, for Pattern
	Channel string
	Payload []byte // shared by every subscriber of the message: read only
}

// Subscriber is a client that receives messages. Deliver must not block
// nor call the Broker: it queues the message for the client (or drops the
// client when its queue is over its limit).
type Subscriber interface {
	Deliver(m Message)
}

// Broker holds this process's subscriptions. Its zero value is not ready:
// use New.
type Broker struct {
	mu       sync.RWMutex
	channels map[string]map[Subscriber]struct{}
	shards   map[string]map[Subscriber]struct{}
	patterns map[string]*patternSubs

	out *outbox // to the other instances; nil: this process only
}

type patternSubs struct {
	p    *glob.Pattern
	subs map[Subscriber]struct{}
}

// New returns a Broker for this process only; Attach adds a transport.
func New() *Broker {
	return &Broker{
		channels: map[string]map[Subscriber]struct{}{},
		shards:   map[string]map[Subscriber]struct{}{},
		patterns: map[string]*patternSubs{},
	}
}

// Subscribe subscribes s to name (a channel, pattern or shard channel) and
// reports whether it was not subscribed yet.
func (b *Broker) Subscribe(s Subscriber, kind Kind, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if kind == Pattern {
		ps := b.patterns[name]
		if ps == nil {
			ps = &patternSubs{p: glob.Compile(name, false), subs: map[Subscriber]struct{}{}}
			b.patterns[name] = ps
		}
		return add(ps.subs, s)
	}
	m := b.table(kind)
	subs := m[name]
	if subs == nil {
		subs = map[Subscriber]struct{}{}
		m[name] = subs
	}
	return add(subs, s)
}

// Unsubscribe ends s's subscription to name and reports whether there was
// one.
func (b *Broker) Unsubscribe(s Subscriber, kind Kind, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if kind == Pattern {
		ps := b.patterns[name]
		if ps == nil {
			return false
		}
		ok := remove(ps.subs, s)
		if len(ps.subs) == 0 {
			delete(b.patterns, name)
		}
		return ok
	}
	m := b.table(kind)
	subs := m[name]
	ok := remove(subs, s)
	if len(subs) == 0 {
		delete(m, name)
	}
	return ok
}

func (b *Broker) table(kind Kind) map[string]map[Subscriber]struct{} {
	if kind == Shard {
		return b.shards
	}
	return b.channels
}

func add(m map[Subscriber]struct{}, s Subscriber) bool {
	if _, ok := m[s]; ok {
		return false
	}
	m[s] = struct{}{}
	return true
}

func remove(m map[Subscriber]struct{}, s Subscriber) bool {
	if _, ok := m[s]; !ok {
		return false
	}
	delete(m, s)
	return true
}

// Publish delivers payload to this process's subscribers of channel (kind
// Channel: and of the patterns that match it; kind Shard: SPUBLISH) and
// sends it to the other instances. It returns how many subscribers here
// received it, which is what PUBLISH answers (as a Redis Cluster node
// counts its own clients only). The payload is kept: the caller must not
// change it.
func (b *Broker) Publish(kind Kind, channel string, payload []byte) int {
	n := b.deliver(kind, channel, payload)
	if b.out != nil {
		b.out.send(Envelope{Shard: kind == Shard, Channel: channel, Payload: payload})
	}
	return n
}

// PublishLocal delivers payload to this process's subscribers only: a
// keyspace notification, which each instance sends of its own writes.
func (b *Broker) PublishLocal(kind Kind, channel string, payload []byte) int {
	return b.deliver(kind, channel, payload)
}

// deliver hands a message to this process's subscribers.
func (b *Broker) deliver(kind Kind, channel string, payload []byte) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for s := range b.table(kind)[channel] {
		s.Deliver(Message{Kind: kind, Channel: channel, Payload: payload})
		n++
	}
	if kind == Shard {
		return n
	}
	for name, ps := range b.patterns {
		if !ps.p.Match(channel) {
			continue
		}
		for s := range ps.subs {
			s.Deliver(Message{Kind: Pattern, Pattern: name, Channel: channel, Payload: payload})
			n++
		}
	}
	return n
}

// Channels lists the channels (kind Channel) or shard channels (Shard)
// with at least one subscriber here, that match pattern ("" for all):
// PUBSUB CHANNELS and SHARDCHANNELS.
func (b *Broker) Channels(kind Kind, pattern string) []string {
	var p *glob.Pattern
	if pattern != "" {
		p = glob.Compile(pattern, false)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []string
	for name := range b.table(kind) {
		if p == nil || p.Match(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// NumSub is how many subscribers here channel has (PUBSUB NUMSUB,
// SHARDNUMSUB).
func (b *Broker) NumSub(kind Kind, channel string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.table(kind)[channel])
}

// NumPat is how many patterns have a subscriber here (PUBSUB NUMPAT).
func (b *Broker) NumPat() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.patterns)
}
