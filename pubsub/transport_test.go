package pubsub

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/testenv"
)

var (
	pg    *testenv.PG
	redis *testenv.Redis
)

func TestMain(m *testing.M) {
	var err error
	if pg, err = testenv.StartPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if redis, err = testenv.StartRedis(); err != nil {
		pg.Stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	pg.Stop()
	redis.Stop()
	os.Exit(code)
}

// pair attaches two brokers, standing for two pgcache instances, to two
// transports over one store.
func pair(t *testing.T, mk func() Transport) (a, b *Broker) {
	t.Helper()
	a, b = New(), New()
	a.Attach(mk(), zap.NewNop())
	b.Attach(mk(), zap.NewNop())
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// crossInstance publishes through a and checks that b's subscribers get
// every message, in order, and that a's get each once.
func crossInstance(t *testing.T, a, b *Broker) {
	onB, onA := newInbox(), newInbox()
	b.Subscribe(onB, Channel, "jobs")
	b.Subscribe(onB, Pattern, "big*")
	a.Subscribe(onA, Channel, "jobs")
	waitReceiving(t, a, b, onB)

	const n = 1000
	for i := range n {
		a.Publish(Channel, "jobs", []byte(fmt.Sprintf("m%04d", i)))
	}
	big := bytes.Repeat([]byte("0123456789\x00\xff"), 5000) // 60 KB, binary
	a.Publish(Channel, "bigdata", big)
	a.Publish(Shard, "jobs", []byte("shard")) // no shard subscriber: not delivered

	deadline := time.After(20 * time.Second)
	for len(onB.all()) < n+1 {
		select {
		case <-onB.got:
		case <-deadline:
			t.Fatalf("b received %d of %d messages", len(onB.all()), n+1)
		}
	}
	got := onB.all()
	for i := range n {
		if want := fmt.Sprintf("m%04d", i); string(got[i].Payload) != want || got[i].Channel != "jobs" {
			t.Fatalf("message %d on b = %q on %q, want %q on jobs", i, got[i].Payload, got[i].Channel, want)
		}
	}
	if m := got[n]; m.Kind != Pattern || m.Pattern != "big*" || !bytes.Equal(m.Payload, big) {
		t.Fatalf("the 60 KB message arrived as %d bytes on %q (%v)", len(m.Payload), m.Channel, m.Kind)
	}
	time.Sleep(100 * time.Millisecond) // an echo of a's own messages would have come by now
	if got := len(onA.all()); got != n {
		t.Fatalf("a's own subscriber got %d messages, want %d (each once, none echoed back)", got, n)
	}
}

// waitReceiving publishes through a until b hears it: b's transport is
// listening.
func waitReceiving(t *testing.T, a, b *Broker, in *inbox) {
	t.Helper()
	probe := newInbox()
	b.Subscribe(probe, Channel, "probe")
	defer b.Unsubscribe(probe, Channel, "probe")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		a.Publish(Channel, "probe", []byte("?"))
		select {
		case <-probe.got:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("the second instance never heard the first")
}

func TestPostgresTransport(t *testing.T) {
	pool := pg.Pool(t)
	a, b := pair(t, func() Transport { return NewPostgres(pool) })
	crossInstance(t, a, b)
}

func TestValkeyTransport(t *testing.T) {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{redis.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	a, b := pair(t, func() Transport { return NewValkey(c, "") })
	crossInstance(t, a, b)
}

func TestNotifyParts(t *testing.T) {
	p := NewPostgres(nil)
	msg := Envelope{Channel: "ch an\nnel", Payload: bytes.Repeat([]byte{0, 1, 2, 255}, 10000)}
	parts, err := p.encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("a 40 KB message in %d part", len(parts))
	}
	var got []byte
	for i, s := range parts {
		if len(s) > maxNotify {
			t.Fatalf("part %d is %d bytes", i, len(s))
		}
		f, ok := parseNotify(s)
		if !ok || f.part != i || f.parts != len(parts) || f.env.Channel != msg.Channel {
			t.Fatalf("part %d parses as %+v %v", i, f, ok)
		}
		got = append(got, f.env.Payload...)
	}
	if !bytes.Equal(got, msg.Payload) {
		t.Fatal("the parts do not make the message")
	}
	if _, ok := parseNotify("something else"); ok {
		t.Fatal("a foreign notification parsed")
	}
}
