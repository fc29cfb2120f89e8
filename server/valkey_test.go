package server

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// Valkey killed while pgcache serves a client-cached route over RESP and
// HTTP: the route answers `backend vk unavailable` and 503, well within the
// client's own deadline; /readyz names the backend; the memory route keeps
// serving; goroutines and heap stay where they were while the server is
// down; and once it is back, empty, the route recovers without a restart
// and never serves what the client cache held before the crash.
func TestValkeyDownMidRun(t *testing.T) {
	srv := testenv.RedisFor(t)
	s := startPgcache(t, fmt.Sprintf(`
backends:
  vk:  {type: valkey, addrs: [%q], dial_timeout: 500ms, command_timeout: 1s, client_cache: {ttl: 1m}}
  mem: {type: memory}
routes:
  - {name: valkey, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
`, srv.Addr()))
	ctx := context.Background()
	// The client waits far longer than command_timeout: every error below is
	// pgcache's answer, not the client giving up.
	rc := redis.NewClient(&redis.Options{Addr: s.Addr("resp"), DisableIdentity: true,
		ReadTimeout: 10 * time.Second, MaxRetries: -1, PoolSize: 8})
	t.Cleanup(func() { rc.Close() })
	httpGet := func(key string) (int, string) {
		status, body := httpDo(t, "GET", "http://"+s.Addr("http")+"/valkey/get?id="+key, nil)
		return status, string(body)
	}

	if err := rc.Set(ctx, "vk:k", "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 { // cached by now
		if v, err := rc.Get(ctx, "vk:k").Result(); err != nil || v != "old" {
			t.Fatalf("GET vk:k = %q, %v", v, err)
		}
	}

	// Load on both fronts, counting answers by kind.
	var (
		ok, down atomic.Int64
		other    atomic.Value
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch {
				case w == 3:
					status, body := httpGet("h" + strconv.Itoa(i%32))
					switch status {
					case 200, 404:
					case 503:
						err = fmt.Errorf("%s", body)
					default:
						err = fmt.Errorf("HTTP %d %q", status, body)
					}
				case i%2 == 0:
					err = rc.Set(ctx, "vk:w"+strconv.Itoa(i%32), "x", 0).Err()
				default:
					err = rc.Get(ctx, "vk:k").Err()
					if err == redis.Nil {
						err = nil
					}
				}
				switch {
				case err == nil:
					ok.Add(1)
				case strings.Contains(err.Error(), "backend vk unavailable"):
					down.Add(1)
					time.Sleep(time.Millisecond)
				default:
					other.Store(err)
				}
			}
		}()
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad)
	eventually(t, "load served", func() bool { return ok.Load() > 200 })

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "calls failing with backend vk unavailable", func() bool { return down.Load() > 100 })
	eventually(t, "/readyz 503 naming backend vk", func() bool {
		status, body := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
		return status == 503 && strings.Contains(string(body), "backend vk")
	})
	if status, body := httpGet("k"); status != 503 || !strings.Contains(body, "backend vk unavailable") {
		t.Errorf("HTTP get while Valkey is down = %d %q, want 503 backend vk unavailable", status, body)
	}
	if err := rc.Set(ctx, "m", "v", 0).Err(); err != nil {
		t.Errorf("the memory route does not serve while Valkey is down: %v", err)
	}

	// While the server stays down, the failing load leaves nothing behind.
	base := sample()
	peak := base
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		now := sample()
		peak.goroutines = max(peak.goroutines, now.goroutines)
		peak.heap = max(peak.heap, now.heap)
	}
	if peak.goroutines > base.goroutines+10 {
		t.Errorf("goroutines grew from %d to %d while Valkey was down", base.goroutines, peak.goroutines)
	}
	if peak.heap > base.heap+32<<20 {
		t.Errorf("heap grew from %d to %d bytes while Valkey was down", base.heap, peak.heap)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The server came back empty; another client writes k straight to it.
	if _, err := srv.Do(ctx, "SET", "valkey:k", "new"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the route serves again", func() bool {
		v, err := rc.Get(ctx, "vk:k").Result()
		if err == nil && v == "old" {
			t.Fatal("GET served the value the client cache held before the crash")
		}
		return err == nil && v == "new"
	})
	eventually(t, "/readyz 200", func() bool {
		status, _ := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
		return status == 200
	})
	before := ok.Load()
	eventually(t, "the load recovers", func() bool { return ok.Load() > before+200 })
	stopLoad()
	t.Logf("%d requests answered, %d refused with backend vk unavailable; while down: %+v, peak %+v", ok.Load(), down.Load(), base, peak)
	if err := other.Load(); err != nil {
		t.Errorf("a request failed with %v, want only backend vk unavailable", err)
	}
}

type usage struct {
	goroutines int
	heap       uint64
}

// sample reads this process's goroutines and live heap after a collection.
func sample() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}
