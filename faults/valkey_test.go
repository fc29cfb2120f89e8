package faults

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// Valkey (or Redis) killed under load and started again, empty (it keeps
// nothing on disk). Requests fail while it is down, with an error, and
// only then: `backend vk unavailable` over RESP, 503 over HTTP, and
// /readyz names the backend, while the memory route keeps serving and
// goroutines and heap stay put. pgcache reconnects by itself; the
// client-side cache never serves a value from before the crash.
func TestValkeyKilledRestarted(t *testing.T) {
	leakCheck(t)
	srv := testenv.RedisFor(t)
	p := startPgcache(t, fmt.Sprintf(`
backends:
  vk: {type: valkey, addrs: [%q], dial_timeout: 1s, command_timeout: 1s, client_cache: {ttl: 1m}}
  mem: {type: memory}
routes:
  - {name: valkey, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
`, srv.Addr()))
	// A value read enough to sit in the client-side cache.
	c := dialRESP(t, p.resp)
	if _, err := c.Do("SET", "vk:old", "before the crash"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, err := c.Do("GET", "vk:old"); err != nil || v != "before the crash" {
			t.Fatalf("GET vk:old = %q, %v", v, err)
		}
	}
	l := startLoad(t, p.resp, loadOptions{prefix: "vk:", writers: 4})
	var (
		restarted  atomic.Bool
		oldReads   atomic.Int64 // reads of vk:old after the restart
		staleReads atomic.Int64 // … that returned the value from before the crash
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			var rc *respConn
			defer func() {
				if rc != nil {
					rc.Close()
				}
			}()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				if rc == nil {
					var err error
					if rc, err = dialRESPTimeout(p.resp, 5*time.Second); err != nil {
						rc = nil
						continue
					}
				}
				after := restarted.Load()
				v, err := rc.Do("GET", "vk:old")
				if err != nil {
					if _, ok := err.(errReply); !ok {
						rc.Close()
						rc = nil
					}
					continue
				}
				if after {
					oldReads.Add(1)
					if v == "before the crash" {
						staleReads.Add(1)
					}
				}
			}
		})
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})
	l.waitOK(t, 500, 20*time.Second)

	killed := time.Now()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	l.waitFailed(t, 50, 20*time.Second)
	downWhileLoaded(t, p)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	restarted.Store(true)
	var recovered time.Time
	eventually(t, 30*time.Second, "requests succeed again", func() bool {
		recovered = l.firstOKAfter(up)
		return !recovered.IsZero()
	})
	l.waitOK(t, 500, 30*time.Second)
	hc := httpClient(t)
	eventually(t, 10*time.Second, "/readyz 200", func() bool { status, _ := get(t, hc, p.admin+"/readyz"); return status == 200 })
	settled := time.Now()
	l.waitOK(t, 500, 30*time.Second)
	eventually(t, 10*time.Second, "reads of vk:old after the restart", func() bool { return oldReads.Load() > 100 })
	close(stop)
	wg.Wait()
	l.Stop()

	if n := staleReads.Load(); n > 0 {
		t.Errorf("%d of %d reads after the restart returned the value cached before the crash", n, oldReads.Load())
	}
	if v, err := c.Do("GET", "vk:old"); err != nil || v != "" {
		t.Errorf("GET vk:old after the restart = %q, %v; want nil", v, err)
	}
	first, last := l.failureSpan()
	if first.Before(killed) {
		t.Errorf("a request failed %v before the kill", killed.Sub(first))
	}
	if n := l.failedBetween(settled, time.Now()); n > 0 {
		t.Errorf("%d requests failed after recovery", n)
	}
	// Writes acknowledged after the restart are there; those before went
	// with the server, which keeps nothing on disk.
	acked := l.ackedWrites()
	var lostAfter, lostBefore int
	direct := dialRESP(t, srv.Addr())
	for k, v := range acked {
		got, err := direct.Do("GET", "valkey:"+strings.TrimPrefix(k, "vk:"))
		if err != nil {
			t.Fatal(err)
		}
		if got != v {
			if before, _ := l.ackedBefore([]string{k}, up); before == 1 {
				lostBefore++
			} else {
				lostAfter++
			}
		}
	}
	if lostAfter > 0 {
		t.Errorf("%d writes acknowledged after the restart are not in Valkey", lostAfter)
	}
	t.Logf("errors:\n%s", l.errorSummary())
	figure(t, "valkey killed: down %.2fs (kill to restarted); first success %.2fs after it was back; failed requests %d "+
		"(from %+.2fs to %+.2fs after the kill; %d sent after recovery); "+
		"reads of a key cached before the crash: %d, stale %d; acked writes %d, lost %d (all acknowledged before the crash: "+
		"the server keeps nothing on disk)",
		up.Sub(killed).Seconds(), recovered.Sub(up).Seconds(), l.failed.Load(), first.Sub(killed).Seconds(),
		last.Sub(killed).Seconds(), l.failedBetween(settled, time.Now()), oldReads.Load(), staleReads.Load(),
		len(acked), lostBefore+lostAfter)
}

// downWhileLoaded checks, with Valkey down and the load failing, what each
// front answers, and that the failing load leaves nothing piling up.
func downWhileLoaded(t *testing.T, p *pgcache) {
	t.Helper()
	c, hc := dialRESP(t, p.resp), httpClient(t)
	defer c.Close()
	if _, err := c.Do("GET", "vk:any"); err == nil || !strings.Contains(err.Error(), "backend vk unavailable") {
		t.Errorf("GET with Valkey down = %v, want ERR backend vk unavailable", err)
	}
	if status, body := get(t, hc, p.http+"/valkey/get?id=any"); status != 503 || !strings.Contains(body, "backend vk unavailable") {
		t.Errorf("HTTP get with Valkey down = %d %q, want 503 backend vk unavailable", status, body)
	}
	eventually(t, 10*time.Second, "/readyz 503 naming backend vk", func() bool {
		status, body := get(t, hc, p.admin+"/readyz")
		return status == 503 && strings.Contains(body, "backend vk")
	})
	if v, err := c.Do("SET", "other", "v"); err != nil || v != "OK" {
		t.Errorf("SET on the memory route with Valkey down = %q, %v", v, err)
	}
	// pgcache runs in this process: its goroutines, descriptors and heap
	// are the test's own. Goroutines and descriptors are judged by their
	// median over two seconds of failing requests (about 1,500 a second):
	// one leaked per request would put it hundreds above the start, while
	// a sample may catch a burst of requests in flight (timers, retries)
	// that a loaded machine has not run to their end yet.
	base, baseHeap := self(), liveHeap()
	var gs, fds []int
	peakHeap := baseHeap
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		now := self()
		gs, fds = append(gs, now.goroutines), append(fds, now.fds)
		peakHeap = max(peakHeap, liveHeap())
	}
	slices.Sort(gs)
	slices.Sort(fds)
	mid := resources{goroutines: gs[len(gs)/2], fds: fds[len(fds)/2]}
	if mid.goroutines > base.goroutines+10 || mid.fds > base.fds+10 || peakHeap > baseHeap+32<<20 {
		t.Errorf("while Valkey was down, %v became %v (median; peak %d goroutines, %d fds) and the heap %d bytes became %d",
			base, mid, gs[len(gs)-1], fds[len(fds)-1], baseHeap, peakHeap)
	}
}

// liveHeap is this process's live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// get is an HTTP GET of url ("host:port/path").
func get(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get("http://" + url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
