package server

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// BenchmarkPubSubDelivery publishes through one instance to a subscriber
// of another, with only PostgreSQL between them, at a steady rate, and
// reports the delivery latency (publish call to message received) at the
// median, p99 and most. One run is a fixed load; run it with -benchtime 1x:
//
//	go test -run '^$' -bench PubSubDelivery -benchtime 1x ./server/
func BenchmarkPubSubDelivery(b *testing.B) {
	const (
		rate     = 1000 // messages a second
		duration = 10 * time.Second
	)
	usersTable(b)
	pub, sub := startPgcache(b, pubsubConfig(pg.DSN())), startPgcache(b, pubsubConfig(pg.DSN()))
	ctx := context.Background()
	rp, rs := redisClient(b, pub), redisClient(b, sub)
	ps := rs.Subscribe(ctx, "bench")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	msgs := ps.Channel(redis.WithChannelSize(rate * 10))
	eventually(b, "the subscriber hears the publisher", func() bool {
		rp.Publish(ctx, "bench", "probe")
		select {
		case <-msgs:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	time.Sleep(200 * time.Millisecond)
	for len(msgs) > 0 {
		<-msgs
	}

	for range b.N {
		n := int(duration.Seconds() * rate)
		sent := make([]atomic.Int64, n) // UnixNano of each PUBLISH
		hist := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
		done := make(chan int)
		go func() { // receives until every message came, or 10 s after the last was sent
			got := 0
			for got < n {
				select {
				case m := <-msgs:
					i, err := strconv.Atoi(m.Payload)
					if err != nil || i < 0 || i >= n {
						continue // a late probe
					}
					hist.RecordValue((time.Now().UnixNano() - sent[i].Load()) / 1000) //nolint:errcheck // bounded above
					got++
				case <-time.After(10 * time.Second):
					done <- got
					return
				}
			}
			done <- got
		}()
		start := time.Now()
		for i := range n { // on a schedule: a late message is followed by the next at once
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
			sent[i].Store(time.Now().UnixNano())
			if err := rp.Publish(ctx, "bench", strconv.Itoa(i)).Err(); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		if got := <-done; got != n {
			b.Fatalf("%d of %d messages arrived", got, n)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(hist.ValueAtQuantile(50))/1000, "p50-ms")
		b.ReportMetric(float64(hist.ValueAtQuantile(99))/1000, "p99-ms")
		b.ReportMetric(float64(hist.Max())/1000, "max-ms")
	}
}
