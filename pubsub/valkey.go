package pubsub

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// DefaultValkeyPrefix starts the Valkey channels pgcache's messages travel
// on: a PUBLISH of channel c goes out as <prefix>c:<c>, an SPUBLISH as
// <prefix>s:<c>.
const DefaultValkeyPrefix = "pgcache:pubsub:"

// Valkey is a Transport over a Valkey's (or Redis's) own pub/sub. A
// message is PUBLISHed to a channel of pgcache's own, its bytes behind the
// sender's 8-byte origin; every instance PSUBSCRIBEs to the prefix. Valkey
// delivers one connection's publications in order, and the messages of a
// Send go out on one connection as a pipeline.
type Valkey struct {
	c      valkey.Client
	prefix string
	origin [8]byte
}

// NewValkey returns a transport over c with channels under prefix
// (DefaultValkeyPrefix when empty).
func NewValkey(c valkey.Client, prefix string) *Valkey {
	if prefix == "" {
		prefix = DefaultValkeyPrefix
	}
	v := &Valkey{c: c, prefix: prefix}
	rand.Read(v.origin[:])
	return v
}

func (v *Valkey) Send(ctx context.Context, msgs []Envelope) error {
	cmds := make(valkey.Commands, len(msgs))
	for i, m := range msgs {
		kind := "c:"
		if m.Shard {
			kind = "s:"
		}
		body := make([]byte, 0, len(v.origin)+len(m.Payload))
		body = append(append(body, v.origin[:]...), m.Payload...)
		cmds[i] = v.c.B().Publish().Channel(v.prefix + kind + m.Channel).Message(valkey.BinaryString(body)).Build()
	}
	for _, r := range v.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (v *Valkey) Receive(ctx context.Context, deliver func(Envelope)) error {
	return v.c.Receive(ctx, v.c.B().Psubscribe().Pattern(v.prefix+"*").Build(), func(m valkey.PubSubMessage) {
		rest, ok := strings.CutPrefix(m.Channel, v.prefix)
		if !ok || len(rest) < 2 || len(m.Message) < len(v.origin) || m.Message[:len(v.origin)] == string(v.origin[:]) {
			return
		}
		e := Envelope{Channel: rest[2:], Payload: []byte(m.Message[len(v.origin):])}
		switch rest[:2] {
		case "s:":
			e.Shard = true
		case "c:":
		default:
			return
		}
		deliver(e)
	})
}

// Close leaves the client to its owner (the Valkey backend).
func (v *Valkey) Close() error { return nil }

var _ Transport = (*Valkey)(nil)
