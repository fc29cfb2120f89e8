package proxy

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgcache/pgcache/pubsub"
)

// Publish/subscribe. A connection's subscriptions are kept here and in the
// server's broker (package pubsub), which delivers this process's messages
// and those of the other instances its transport hears. A message reaches
// a subscriber through its push queue (push.go), written between batches:
// a RESP2 client in Pub/Sub mode gets arrays, a RESP3 one pushes. A
// subscriber that lets its messages pile up meets client-output-buffer-
// limit pubsub (pubLimit) and is disconnected; a publisher never waits.

// subscriptions are a connection's channels, patterns and shard channels.
type subscriptions struct {
	channels, patterns, shards map[string]struct{}
}

// count is what SUBSCRIBE and PSUBSCRIBE answer: channels and patterns.
func (s *subscriptions) count() int { return len(s.channels) + len(s.patterns) }

// any reports whether the connection subscribed to anything (RESP2: it is
// in Pub/Sub mode).
func (s *subscriptions) any() bool { return s.count()+len(s.shards) > 0 }

func (s *subscriptions) set(kind pubsub.Kind) *map[string]struct{} {
	switch kind {
	case pubsub.Pattern:
		return &s.patterns
	case pubsub.Shard:
		return &s.shards
	}
	return &s.channels
}

// The reply words of each kind of subscription.
var subWords = [...]struct{ sub, unsub, msg string }{
	pubsub.Channel: {"subscribe", "unsubscribe", "message"},
	pubsub.Pattern: {"psubscribe", "punsubscribe", "pmessage"},
	pubsub.Shard:   {"ssubscribe", "sunsubscribe", "smessage"},
}

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *conn, args [][]byte) { c.subscribe(pubsub.Channel, args) }

// PSUBSCRIBE pattern [pattern ...]
func cmdPSubscribe(c *conn, args [][]byte) { c.subscribe(pubsub.Pattern, args) }

// SSUBSCRIBE shardchannel [shardchannel ...]
func cmdSSubscribe(c *conn, args [][]byte) { c.subscribe(pubsub.Shard, args) }

// UNSUBSCRIBE [channel [channel ...]]
func cmdUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(pubsub.Channel, args) }

// PUNSUBSCRIBE [pattern [pattern ...]]
func cmdPUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(pubsub.Pattern, args) }

// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
func cmdSUnsubscribe(c *conn, args [][]byte) { c.unsubscribe(pubsub.Shard, args) }

func (c *conn) subscribe(kind pubsub.Kind, args [][]byte) {
	if c.multi != nil { // Redis 7 refuses it inside MULTI
		c.writeError("ERR " + strings.ToUpper(subWords[kind].sub) + " isn't allowed for a DENY BLOCKING client")
		return
	}
	set := c.subs.set(kind)
	if *set == nil {
		*set = map[string]struct{}{}
	}
	for _, a := range args[1:] {
		name := string(a)
		if _, ok := (*set)[name]; !ok {
			(*set)[name] = struct{}{}
			c.s.pubsub.Subscribe(c, kind, name)
			if kind == pubsub.Channel && name == invalidateChannel {
				c.push.subscribed.Store(true)
			}
		}
		c.writeSubReply(kind, subWords[kind].sub, a)
	}
}

func (c *conn) unsubscribe(kind pubsub.Kind, args [][]byte) {
	set := c.subs.set(kind)
	names := args[1:]
	if len(names) == 0 {
		for name := range *set {
			names = append(names, []byte(name))
		}
		slices.SortFunc(names, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		if len(names) == 0 {
			c.writeSubReply(kind, subWords[kind].unsub, nil)
			return
		}
	}
	for _, a := range names {
		name := string(a)
		if _, ok := (*set)[name]; ok {
			delete(*set, name)
			c.s.pubsub.Unsubscribe(c, kind, name)
			if kind == pubsub.Channel && name == invalidateChannel {
				c.push.subscribed.Store(false)
			}
		}
		c.writeSubReply(kind, subWords[kind].unsub, a)
	}
}

// writeSubReply is a (un)subscription's reply for one name (nil: none),
// with the count of subscriptions left: an array in RESP2, a push in RESP3.
// Shard subscriptions count apart, as Redis counts them.
func (c *conn) writeSubReply(kind pubsub.Kind, word string, name []byte) {
	defer c.unmute(len(c.out)) // sent under CLIENT REPLY OFF too, as Redis pushes it
	if c.proto == 3 {
		c.out = appendHeader(c.out, '>', 3)
	} else {
		c.writeArray(3)
	}
	c.writeBulkString(word)
	if name == nil {
		c.writeNull()
	} else {
		c.writeBulk(name)
	}
	n := c.subs.count()
	if kind == pubsub.Shard {
		n = len(c.subs.shards)
	}
	c.writeInt(int64(n))
}

// endSubscriptions drops every subscription of a connection that closes.
func (c *conn) endSubscriptions() {
	for kind := range subWords {
		for name := range *c.subs.set(pubsub.Kind(kind)) {
			c.s.pubsub.Unsubscribe(c, pubsub.Kind(kind), name)
		}
	}
	c.subs = subscriptions{}
	c.push.subscribed.Store(false)
}

// PUBLISH channel message
func cmdPublish(c *conn, args [][]byte) {
	c.writeInt(int64(c.s.pubsub.Publish(pubsub.Channel, string(args[1]), clone(args[2]))))
}

// SPUBLISH shardchannel message
func cmdSPublish(c *conn, args [][]byte) {
	c.writeInt(int64(c.s.pubsub.Publish(pubsub.Shard, string(args[1]), clone(args[2]))))
}

// clone copies an argument a message keeps: the read buffer is reused.
func clone(b []byte) []byte { return append([]byte{}, b...) }

// PUBSUB CHANNELS [pattern]
func cmdPubSubChannels(c *conn, args [][]byte) { c.pubsubChannels(pubsub.Channel, args) }

// PUBSUB SHARDCHANNELS [pattern]
func cmdPubSubShardChannels(c *conn, args [][]byte) { c.pubsubChannels(pubsub.Shard, args) }

func (c *conn) pubsubChannels(kind pubsub.Kind, args [][]byte) {
	pattern := ""
	if len(args) > 2 {
		pattern = string(args[2])
	}
	names := c.s.pubsub.Channels(kind, pattern)
	c.writeArray(len(names))
	for _, n := range names {
		c.writeBulkString(n)
	}
}

// PUBSUB NUMSUB [channel [channel ...]]
func cmdPubSubNumSub(c *conn, args [][]byte) { c.pubsubNumSub(pubsub.Channel, args) }

// PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
func cmdPubSubShardNumSub(c *conn, args [][]byte) { c.pubsubNumSub(pubsub.Shard, args) }

func (c *conn) pubsubNumSub(kind pubsub.Kind, args [][]byte) {
	c.writeMap(len(args) - 2)
	for _, ch := range args[2:] {
		c.writeBulk(ch)
		c.writeInt(int64(c.s.pubsub.NumSub(kind, string(ch))))
	}
}

// PUBSUB NUMPAT
func cmdPubSubNumPat(c *conn, _ [][]byte) { c.writeInt(int64(c.s.pubsub.NumPat())) }

// Deliver is pubsub.Subscriber's: a message for this connection, queued
// as a push, on the publisher's goroutine.
func (c *conn) Deliver(m pubsub.Message) {
	msg := pushMsg{pub: &m}
	c.enqueue(&msg)
}

// appendMessage writes a message in the connection's protocol: Redis's
// ["message", channel, payload], ["pmessage", pattern, channel, payload],
// ["smessage", channel, payload].
func appendMessage(b []byte, proto int32, m *pubsub.Message) []byte {
	n := 3
	if m.Kind == pubsub.Pattern {
		n = 4
	}
	if proto == 3 {
		b = append(b, '>')
	} else {
		b = append(b, '*')
	}
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	b = appendBulkString(b, subWords[m.Kind].msg)
	if m.Kind == pubsub.Pattern {
		b = appendBulkString(b, m.Pattern)
	}
	b = appendBulkString(b, m.Channel)
	return appendBulkString(b, string(m.Payload))
}

func appendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// pubLimit is client-output-buffer-limit's pubsub class: a subscriber
// whose queued messages pass hard, or stay past soft for longer than
// softFor, is disconnected. 0: no limit.
type pubLimit struct {
	hard, soft int64
	softFor    time.Duration
}

// defaultPubLimit is Redis's default: pubsub 32mb 8mb 60.
var defaultPubLimit = pubLimit{hard: 32 << 20, soft: 8 << 20, softFor: 60 * time.Second}
