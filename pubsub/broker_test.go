package pubsub

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// inbox is a subscriber that keeps what it is delivered.
type inbox struct {
	mu   sync.Mutex
	msgs []Message
	got  chan struct{}
}

func newInbox() *inbox { return &inbox{got: make(chan struct{}, 1<<16)} }

func (in *inbox) Deliver(m Message) {
	in.mu.Lock()
	in.msgs = append(in.msgs, m)
	in.mu.Unlock()
	in.got <- struct{}{}
}

func (in *inbox) all() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.msgs)
}

func TestBroker(t *testing.T) {
	b := New()
	a, c := newInbox(), newInbox()
	if !b.Subscribe(a, Channel, "news") || b.Subscribe(a, Channel, "news") {
		t.Fatal("Subscribe: first true, second false")
	}
	b.Subscribe(c, Pattern, "n*")
	b.Subscribe(c, Pattern, "*s")
	b.Subscribe(a, Shard, "news")
	if n := b.Publish(Channel, "news", []byte("hi")); n != 3 {
		t.Fatalf("PUBLISH news reached %d, want 3 (a, and c by two patterns)", n)
	}
	if n := b.Publish(Shard, "news", []byte("s")); n != 1 {
		t.Fatalf("SPUBLISH news reached %d, want 1 (patterns do not match shard channels)", n)
	}
	if n := b.Publish(Channel, "other", []byte("x")); n != 0 {
		t.Fatalf("PUBLISH other reached %d", n)
	}
	got := a.all()
	if len(got) != 2 || got[0].Kind != Channel || string(got[0].Payload) != "hi" || got[1].Kind != Shard {
		t.Fatalf("a got %+v", got)
	}
	pats := c.all()
	if len(pats) != 2 || pats[0].Kind != Pattern || pats[0].Channel != "news" {
		t.Fatalf("c got %+v", pats)
	}
	if got, want := b.Channels(Channel, ""), []string{"news"}; !slices.Equal(got, want) {
		t.Fatalf("CHANNELS = %v", got)
	}
	if got := b.Channels(Channel, "x*"); len(got) != 0 {
		t.Fatalf("CHANNELS x* = %v", got)
	}
	if n := b.NumSub(Channel, "news"); n != 1 {
		t.Fatalf("NUMSUB news = %d", n)
	}
	if n := b.NumPat(); n != 2 {
		t.Fatalf("NUMPAT = %d", n)
	}
	if !b.Unsubscribe(a, Channel, "news") || b.Unsubscribe(a, Channel, "news") {
		t.Fatal("Unsubscribe: first true, second false")
	}
	b.Unsubscribe(c, Pattern, "n*")
	if n := b.NumPat(); n != 1 {
		t.Fatalf("NUMPAT after PUNSUBSCRIBE = %d", n)
	}
	if got := b.Channels(Channel, ""); len(got) != 0 {
		t.Fatalf("CHANNELS after the last unsubscribe = %v", got)
	}
}

func TestBrokerConcurrent(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		in := newInbox()
		go func() {
			defer wg.Done()
			for j := range 500 {
				ch := fmt.Sprintf("c%d", j%7)
				b.Subscribe(in, Channel, ch)
				b.Unsubscribe(in, Channel, ch)
			}
		}()
		go func() {
			defer wg.Done()
			for j := range 500 {
				b.Publish(Channel, fmt.Sprintf("c%d", (i+j)%7), []byte("x"))
			}
		}()
	}
	wg.Wait()
	if got := b.Channels(Channel, ""); len(got) != 0 {
		t.Fatalf("channels left: %v", got)
	}
}
