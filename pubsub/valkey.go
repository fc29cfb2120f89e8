package pubsub

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"

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
	connect func() (valkey.Client, error)
	prefix  string
	origin  [8]byte

	mu    sync.Mutex
	c     valkey.Client // nil until connected
	owned bool          // c is the transport's: Close closes it
}

// NewValkey returns a transport over c with channels under prefix
// (DefaultValkeyPrefix when empty).
func NewValkey(c valkey.Client, prefix string) *Valkey {
	v := newValkey(prefix)
	v.c = c
	return v
}

// DialValkey returns a transport that makes a client of its own with opt
// when it first needs one (a server down at start is tried again), and
// closes it with the transport.
func DialValkey(opt valkey.ClientOption, prefix string) *Valkey {
	v := newValkey(prefix)
	v.connect, v.owned = func() (valkey.Client, error) { return valkey.NewClient(opt) }, true
	return v
}

func newValkey(prefix string) *Valkey {
	if prefix == "" {
		prefix = DefaultValkeyPrefix
	}
	v := &Valkey{prefix: prefix}
	rand.Read(v.origin[:])
	return v
}

// client is the transport's client, connecting it if need be.
func (v *Valkey) client() (valkey.Client, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.c == nil {
		c, err := v.connect()
		if err != nil {
			return nil, err
		}
		v.c = c
	}
	return v.c, nil
}

func (v *Valkey) Send(ctx context.Context, msgs []Envelope) error {
	c, err := v.client()
	if err != nil {
		return err
	}
	cmds := make(valkey.Commands, len(msgs))
	for i, m := range msgs {
		kind := "c:"
		if m.Shard {
			kind = "s:"
		}
		body := make([]byte, 0, len(v.origin)+len(m.Payload))
		body = append(append(body, v.origin[:]...), m.Payload...)
		cmds[i] = c.B().Publish().Channel(v.prefix + kind + m.Channel).Message(valkey.BinaryString(body)).Build()
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (v *Valkey) Receive(ctx context.Context, deliver func(Envelope)) error {
	c, err := v.client()
	if err != nil {
		return err
	}
	return c.Receive(ctx, c.B().Psubscribe().Pattern(v.prefix+"*").Build(), func(m valkey.PubSubMessage) {
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

// Close closes the client the transport made (one it was given is its
// owner's).
func (v *Valkey) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.owned && v.c != nil {
		v.c.Close()
		v.c = nil
	}
	return nil
}

var _ Transport = (*Valkey)(nil)
