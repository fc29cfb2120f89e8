package pubsub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// NotifyChannel is the LISTEN/NOTIFY channel messages travel on between
// the instances that share a PostgreSQL.
const NotifyChannel = "pgcache_pubsub"

// maxNotify keeps a notification under PostgreSQL's 8000-byte payload
// limit; a message that does not fit in one travels in several parts.
const maxNotify = 7900

// Postgres is a Transport over PostgreSQL's LISTEN/NOTIFY.
//
// A notification is text, so a message is written as
//
//	1 <origin> <seq> <part> <parts> <s|c> <base64 channel> <base64 bytes>
//
// origin names the sending instance (its own are ignored), seq numbers its
// messages, and a message longer than one notification is split into
// parts, numbered from 0, that its receivers put back together. The
// messages of one Send are one transaction: PostgreSQL delivers a
// transaction's notifications together, in the order they were sent, and
// transactions in the order they committed; so every receiver gets one
// instance's messages in the order it published them. Commits are
// asynchronous (synchronous_commit off): a notification has nothing to
// make durable, and is delivered at commit.
type Postgres struct {
	pool   *pgxpool.Pool
	owned  bool // pool is the transport's: Close closes it
	origin string
	seq    atomic.Uint64
}

// NewPostgres returns a transport that sends through pool and listens on
// a connection of its own made with pool's configuration.
func NewPostgres(pool *pgxpool.Pool) *Postgres {
	var id [8]byte
	rand.Read(id[:])
	return &Postgres{pool: pool, origin: hex.EncodeToString(id[:])}
}

const notifySQL = `SELECT pg_notify('` + NotifyChannel + `', $1)`

func (p *Postgres) Send(ctx context.Context, msgs []Envelope) error {
	batch := &pgx.Batch{}
	batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	for _, m := range msgs {
		parts, err := p.encode(m)
		if err != nil {
			return err
		}
		for _, part := range parts {
			batch.Queue(notifySQL, part)
		}
	}
	return p.pool.SendBatch(ctx, batch).Close()
}

// encode writes m as one or more notifications.
func (p *Postgres) encode(m Envelope) ([]string, error) {
	seq := p.seq.Add(1)
	kind := "c"
	if m.Shard {
		kind = "s"
	}
	channel := base64.StdEncoding.EncodeToString([]byte(m.Channel))
	// The header's longest form, with room for the part numbers.
	head := len("1 ") + len(p.origin) + 1 + 20 + 1 + 10 + 1 + 10 + 3 + len(channel) + 1
	room := (maxNotify - head) / 4 * 3 // bytes of the message one part carries
	if room <= 0 {
		return nil, fmt.Errorf("pubsub: channel name of %d bytes is too long for PostgreSQL's notifications", len(m.Channel))
	}
	n := max(1, (len(m.Payload)+room-1)/room)
	parts := make([]string, n)
	var b strings.Builder
	for i := range n {
		chunk := m.Payload[i*room : min(len(m.Payload), (i+1)*room)]
		b.Reset()
		fmt.Fprintf(&b, "1 %s %d %d %d %s %s ", p.origin, seq, i, n, kind, channel)
		b.WriteString(base64.StdEncoding.EncodeToString(chunk))
		parts[i] = b.String()
	}
	return parts, nil
}

// maxPartial bounds the messages whose parts are being put back together.
const maxPartial = 1024

func (p *Postgres) Receive(ctx context.Context, deliver func(Envelope)) error {
	conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	partial := map[string]*assembly{}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		f, ok := parseNotify(n.Payload)
		if !ok || f.origin == p.origin {
			continue
		}
		if f.parts == 1 {
			deliver(f.env)
			continue
		}
		id := f.origin + " " + f.seq
		a := partial[id]
		if a == nil {
			if f.part != 0 {
				continue // the start was missed
			}
			if len(partial) >= maxPartial {
				clear(partial)
			}
			a = &assembly{env: f.env}
			partial[id] = a
		} else if f.part == a.next {
			a.env.Payload = append(a.env.Payload, f.env.Payload...)
		} else {
			delete(partial, id) // a part was missed
			continue
		}
		a.next = f.part + 1
		if a.next == f.parts {
			delete(partial, id)
			deliver(a.env)
		}
	}
}

type assembly struct {
	env  Envelope
	next int
}

type notifyFields struct {
	origin, seq string
	part, parts int
	env         Envelope
}

// parseNotify reads a notification encode wrote; ok is false for anything
// else on the channel.
func parseNotify(s string) (f notifyFields, ok bool) {
	fields := strings.Split(s, " ")
	if len(fields) != 8 || fields[0] != "1" {
		return f, false
	}
	var err error
	f.origin, f.seq = fields[1], fields[2]
	if f.part, err = strconv.Atoi(fields[3]); err != nil {
		return f, false
	}
	if f.parts, err = strconv.Atoi(fields[4]); err != nil || f.part < 0 || f.part >= f.parts {
		return f, false
	}
	f.env.Shard = fields[5] == "s"
	ch, err1 := base64.StdEncoding.DecodeString(fields[6])
	data, err2 := base64.StdEncoding.DecodeString(fields[7])
	if err1 != nil || err2 != nil {
		return f, false
	}
	f.env.Channel, f.env.Payload = string(ch), data
	return f, true
}

// DialPostgres returns a transport with a pool of its own, made with cfg
// (which it may change: at most two connections), closed with it.
func DialPostgres(cfg *pgxpool.Config) (*Postgres, error) {
	cfg.MaxConns, cfg.MinConns = 2, 0
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	p := NewPostgres(pool)
	p.owned = true
	return p, nil
}

// Close closes the pool the transport made (one it was given is its
// owner's).
func (p *Postgres) Close() error {
	if p.owned {
		p.pool.Close()
	}
	return nil
}

var _ Transport = (*Postgres)(nil)
