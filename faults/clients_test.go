package faults

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// memoryConfig is pgcache on one memory route, with extra top-level YAML.
func memoryConfig(extra string) string {
	return `
backends:
  mem: {type: memory, max_bytes: 256MiB}
routes:
  - {name: memory, prefix: "", backend: mem}
` + extra
}

// raiseFDLimit lets this process hold need descriptors (the client and the
// server end of every connection are both here), raising the hard limit
// too when it must and may (as root), and puts the limit back at the end.
func raiseFDLimit(t testing.TB, need uint64) {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	if was.Cur >= need {
		return
	}
	want := syscall.Rlimit{Cur: need, Max: max(was.Max, need)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		t.Fatalf("this case needs %d descriptors; RLIMIT_NOFILE is %d (hard %d) and raising it failed: %v (raise the hard limit: ulimit -Hn %d)",
			need, was.Cur, was.Max, err, need)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was) })
}

// heapInuse is the heap in use after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// dialMany opens n connections to addr, 64 at a time, and runs hello on
// each; it fails the test on the first error.
func dialMany(t testing.TB, addr string, n int, hello func(net.Conn) error) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err == nil {
					conns[i] = c
					err = hello(c)
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("connection %d: %w", i, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() { closeAll(conns) })
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// ping sends PING on a raw connection and reads +PONG.
func ping(c net.Conn) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", buf)
	}
	return nil
}

// 10,000 clients connected at once to the pgcache binary, each served;
// the one past max_clients is refused with Redis's error; once they leave,
// the process is back to the goroutines and descriptors it had. pgcache
// runs as a child process here: the client and the server end of 10,000
// connections in one process would need more descriptors than a default
// hard limit of 20,000 allows.
func TestTenThousandClients(t *testing.T) {
	n := size(10000, 500)
	raiseFDLimit(t, uint64(n+1024))
	c := startChild(t, memoryConfig(fmt.Sprintf("resp: {max_clients: %d}\n", n)))
	metrics := func() map[string]float64 { return scrape(t, c.Admin) }
	goroutines := func() int { return int(metrics()["go_goroutines"]) }
	mustDo(t, c.RESP, "PING")
	base := resources{goroutines: goroutines(), fds: childFDs(c)}
	rss0 := rssKiB(c)

	start := time.Now()
	conns := dialMany(t, c.RESP, n, ping)
	connected := time.Since(start)
	peak := resources{goroutines: goroutines(), fds: childFDs(c)}
	rss1 := rssKiB(c)
	if got := metrics()["pgcache_resp_connected_clients"]; got != float64(n) {
		t.Errorf("pgcache_resp_connected_clients = %v with %d clients connected", got, n)
	}
	// Every one of them is served again, all at once.
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for j := i; j < n; j += 64 {
				if ping(conns[j]) != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d connected clients were not served a second PING", n)
	}
	// One more is told, as Redis tells it, and closed.
	extra, err := net.Dial("tcp", c.RESP)
	if err != nil {
		t.Fatal(err)
	}
	extra.SetDeadline(time.Now().Add(10 * time.Second))
	refusal, _ := io.ReadAll(extra)
	extra.Close()
	if string(refusal) != "-ERR max number of clients reached\r\n" {
		t.Errorf("client %d got %q, want Redis's refusal and a close", n+1, refusal)
	}

	closeAll(conns)
	closed := time.Now()
	var after resources
	eventually(t, 20*time.Second, "the child back to its goroutines and descriptors", func() bool {
		after = resources{goroutines: goroutines(), fds: childFDs(c)}
		return after.goroutines <= base.goroutines+2 && after.fds <= base.fds+2
	})
	figure(t, "%d RESP clients on the pgcache binary: connected and answered in %.2fs; the process went from %v to %v, "+
		"RSS +%d MiB (%.1f KiB a client); client %d refused with -ERR max number of clients reached; back to %v %.2fs after they closed",
		n, connected.Seconds(), base, peak, (rss1-rss0)>>10, float64(rss1-rss0)/float64(n), n+1, after, time.Since(closed).Seconds())
}

// probe measures round trips of a client served while the server is under
// attack: a SET and a GET on one RESP connection.
type probe struct {
	rtts []time.Duration
}

func (pr *probe) run(t testing.TB, addr string, rounds int) {
	t.Helper()
	c := dialRESP(t, addr)
	defer c.Close()
	for i := range rounds {
		start := time.Now()
		if _, err := c.Do("SET", "probe", fmt.Sprint(i)); err != nil {
			t.Fatalf("probe SET: %v", err)
		}
		v, err := c.Do("GET", "probe")
		if err != nil || v != fmt.Sprint(i) {
			t.Fatalf("probe GET = %q, %v", v, err)
		}
		pr.rtts = append(pr.rtts, time.Since(start))
	}
}

func (pr *probe) String() string {
	s := append([]time.Duration(nil), pr.rtts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return "no round trips"
	}
	return fmt.Sprintf("%d round trips, p50 %v, max %v", len(s), s[len(s)/2].Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
}

// 2,000 RESP clients send half a request and then a byte every 500ms:
// everyone else is served meanwhile. Once they go silent, idle_timeout
// closes them, and the half requests never ran.
func TestSlowlorisRESP(t *testing.T) {
	n := size(2000, 200)
	raiseFDLimit(t, uint64(2*n+1024))
	leakCheck(t)
	const idle = 2 * time.Second
	p := startPgcache(t, memoryConfig(fmt.Sprintf("resp: {idle_timeout: %v}\n", idle)))
	mustDo(t, p.resp, "PING")
	base := self()

	// SET slow <10 bytes>, sent up to its third byte of value.
	head := "*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$10\r\nab"
	conns := dialMany(t, p.resp, n, func(c net.Conn) error {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := io.WriteString(c, head)
		return err
	})
	var pr probe
	for range 6 { // 3s of trickle, past idle_timeout
		pr.run(t, p.resp, 20)
		for _, c := range conns {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := io.WriteString(c, "c"); err != nil {
				t.Fatalf("a trickling client was closed: %v", err)
			}
		}
		time.Sleep(idle / 4)
	}
	if got := p.info(t)["connected_clients"]; got != fmt.Sprint(n+1) {
		t.Errorf("connected_clients = %s while %d clients trickle, want %d", got, n, n+1)
	}
	silent := time.Now()
	closedAfter := waitAllClosed(t, conns, idle+10*time.Second)
	if v := mustDo(t, p.resp, "GET", "slow"); v != "" {
		t.Errorf("GET slow = %q: a half request ran", v)
	}
	closeAll(conns)
	after := settle(t, "after the slow clients were closed", base, 2)
	figure(t, "%d RESP slowloris clients (half a SET, then a byte every %v for 3s, then silence): all held while they trickled; "+
		"probe meanwhile: %v; closed by idle_timeout %v after going silent (first %.2fs, last %.2fs); back to %v",
		n, idle/4, &pr, idle, closedAfter[0].Sub(silent).Seconds(), closedAfter[len(closedAfter)-1].Sub(silent).Seconds(), after)
}

// waitAllClosed reads every connection until the server closes it (EOF or
// a reset, after any bytes it sent) and returns when each was closed,
// sorted. A connection still open after bound fails the test.
func waitAllClosed(t testing.TB, conns []net.Conn, bound time.Duration) []time.Time {
	t.Helper()
	at := make([]time.Time, len(conns))
	var open atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(bound)
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, c)
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				open.Add(1)
			}
			at[i] = time.Now()
		})
	}
	wg.Wait()
	if n := open.Load(); n > 0 {
		t.Fatalf("%d of %d connections still open after %v", n, len(conns), bound)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	return at
}

// 2,000 HTTP clients send a request line and then a header byte every
// 300ms: everyone else is served meanwhile, and read_timeout closes each
// one (a 408) however long it keeps trickling.
func TestSlowlorisHTTP(t *testing.T) {
	n := size(2000, 200)
	raiseFDLimit(t, uint64(2*n+1024))
	leakCheck(t)
	const readTimeout = 2 * time.Second
	p := startPgcache(t, memoryConfig(fmt.Sprintf("http: {read_timeout: %v}\n", readTimeout)))
	mustDo(t, p.resp, "SET", "a", "1")
	client := httpClient(t)
	getA := func() error {
		resp, err := client.Get("http://" + p.http + "/memory/get?id=a")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "1" {
			return fmt.Errorf("GET /memory/get?id=a = %d %q", resp.StatusCode, body)
		}
		return nil
	}
	if err := getA(); err != nil {
		t.Fatal(err)
	}
	base := self()

	started := time.Now()
	conns := dialMany(t, p.http, n, func(c net.Conn) error {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := io.WriteString(c, "GET /memory/get?id=a HTTP/1.1\r\nHost: x\r\n")
		return err
	})
	// Trickle a header, a byte at a time, for twice the read timeout.
	var trickling sync.WaitGroup
	stop := make(chan struct{})
	trickling.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				io.WriteString(c, "X-Slow: y\r\n"[i%11:i%11+1]) // fails once the server has closed it
			}
		}
	})
	var served, probes int
	var worst time.Duration
	for time.Since(started) < readTimeout {
		probes++
		t0 := time.Now()
		if err := getA(); err == nil {
			served++
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	closedAt := waitAllClosed(t, conns, readTimeout+10*time.Second)
	close(stop)
	trickling.Wait()
	client.CloseIdleConnections()
	if served != probes {
		t.Errorf("%d of %d requests from a well-behaved client were served during the attack", served, probes)
	}
	closeAll(conns)
	after := settleHTTP(t, "after the slow clients were closed", base, 2)
	figure(t, "%d HTTP slowloris clients (a header byte every 300ms): a well-behaved client served %d of %d times meanwhile "+
		"(slowest %v); all closed by read_timeout %v: from %.2fs to %.2fs after they connected; back to %v",
		n, served, probes, worst.Round(time.Millisecond), readTimeout, closedAt[0].Sub(started).Seconds(),
		closedAt[len(closedAt)-1].Sub(started).Seconds(), after)
}

// Clients that pipeline reads of a 1MiB value and never read the replies:
// each is disconnected once its unread replies pass the output limit, the
// server's memory stays bounded, and everyone else is served.
func TestNeverReadingClients(t *testing.T) {
	n := size(50, 10)
	leakCheck(t)
	const limit = 4 << 20
	p := startPgcache(t, memoryConfig(fmt.Sprintf("resp: {output_buffer_limit: %d, write_timeout: 5s}\nhttp: {write_timeout: 2s}\n", limit)))
	big := strings.Repeat("v", 1<<20)
	mustDo(t, p.resp, "SET", "big", big)
	base := self()
	heap0 := heapInuse()

	disconnects := func() float64 { return p.metrics(t)["pgcache_resp_output_limit_disconnects_total"] }
	before := disconnects()
	req := strings.Repeat(string(encode("GET", "big")), 200) // 200MiB of replies
	hogs := make([]net.Conn, n)
	for i := range hogs {
		c, err := net.Dial("tcp", p.resp)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(64 << 10)
		hogs[i] = c
	}
	t.Cleanup(func() { closeAll(hogs) })
	var peakHeap atomic.Uint64
	sampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-sampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
		}
	})
	for _, c := range hogs {
		go func() {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, req) // the server stops reading once it drops the client
		}()
	}
	var pr probe
	pr.run(t, p.resp, 50)
	eventually(t, 30*time.Second, "every never-reading client dropped", func() bool { return disconnects()-before >= float64(n) })
	close(sampling)
	sampler.Wait()
	closeAll(hogs)
	growth := int64(peakHeap.Load()) - int64(heap0)
	if bound := int64(n)*2*limit + 64<<20; growth > bound {
		t.Errorf("the heap grew by %d MiB for %d never-reading clients, over %d MiB", growth>>20, n, bound>>20)
	}

	// The same over HTTP: pipelined GETs whose responses are never read;
	// write_timeout closes the connection.
	req = strings.Repeat("GET /memory/get?id=big HTTP/1.1\r\nHost: x\r\n\r\n", 200)
	client := httpClient(t)
	var httpHogs []net.Conn
	for range n {
		c, err := net.Dial("tcp", p.http)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(64 << 10)
		httpHogs = append(httpHogs, c)
		go func() {
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, req)
		}()
	}
	t.Cleanup(func() { closeAll(httpHogs) })
	httpStart := time.Now()
	resp, err := client.Get("http://" + p.http + "/memory/get?id=big")
	if err != nil {
		t.Fatalf("a well-behaved HTTP client during the attack: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != len(big) {
		t.Errorf("a well-behaved HTTP client during the attack: %d, %d bytes", resp.StatusCode, len(body))
	}
	closedAt := waitClosedByServer(t, httpHogs, 30*time.Second)
	closeAll(httpHogs)
	client.CloseIdleConnections()
	after := settleHTTP(t, "after the never-reading clients", base, 2)
	figure(t, "%d RESP clients pipelining 200 GETs of a 1MiB value, never reading: all dropped at the %d MiB output limit; "+
		"heap peak +%d MiB (bound %d MiB); probe meanwhile %v; %d HTTP clients doing the same: closed by write_timeout 2s, "+
		"the last %.2fs after they started; back to %v",
		n, limit>>20, growth>>20, (int64(n)*2*limit+64<<20)>>20, &pr, n, closedAt.Sub(httpStart).Seconds(), after)
}

// waitClosedByServer waits until the server has closed every connection,
// without reading what it sent (a client that never reads): the kernel
// reports the socket's peer gone. It returns when the last one closed.
func waitClosedByServer(t testing.TB, conns []net.Conn, bound time.Duration) time.Time {
	t.Helper()
	var last time.Time
	eventually(t, bound, "the server closes every never-reading connection", func() bool {
		for _, c := range conns {
			if !peerClosed(c) {
				return false
			}
		}
		last = time.Now()
		return true
	})
	return last
}

// peerClosed reports whether the peer has closed or reset the connection,
// from the TCP state the kernel keeps (CLOSE_WAIT, or gone), without
// reading: the unread data stays unread.
func peerClosed(c net.Conn) bool {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		closed = err != nil || info.State == unix.BPF_TCP_CLOSE_WAIT || info.State == unix.BPF_TCP_CLOSE
	})
	return closed
}
