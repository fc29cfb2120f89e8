package faults

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/server"
)

// figure logs a measured figure of a case. `go test -v ./faults/ | grep
// figure:` lists them; docs/reliability.md quotes them.
func figure(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("figure: "+format, args...)
}

// pgcache is one in-process pgcache on free loopback ports.
type pgcache struct {
	*server.Server
	resp, http, admin string // addresses
}

// startPgcache runs pgcache in-process with the given YAML config on free
// loopback ports and shuts it down when the test ends. Under -v its log
// goes to the test's, from warnings up.
func startPgcache(t testing.TB, yaml string) *pgcache {
	t.Helper()
	log := zap.NewNop()
	if tt, ok := t.(*testing.T); ok && testing.Verbose() {
		log = zaptest.NewLogger(tt, zaptest.Level(zap.WarnLevel))
	}
	in := pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: yaml, Log: log})
	return &pgcache{Server: in.Server, resp: in.RESP, http: in.HTTP, admin: in.Admin}
}

// tier returns the coherent L1 of a route.
func (p *pgcache) tier(t testing.TB, route string) *coherence.Tier {
	t.Helper()
	r := p.Router().Current().ByName(route)
	if r == nil {
		t.Fatalf("no route %q", route)
	}
	b := r.Backend
	for {
		if tr, ok := b.(*coherence.Tier); ok {
			return tr
		}
		u, ok := b.(interface{ Unwrap() backends.Backend })
		if !ok {
			t.Fatalf("route %q has no L1 tier", route)
		}
		b = u.Unwrap()
	}
}

// info returns INFO's fields.
func (p *pgcache) info(t testing.TB) map[string]string {
	t.Helper()
	c := dialRESP(t, p.resp)
	defer c.Close()
	reply, err := c.Do("INFO")
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(reply, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			fields[k] = v
		}
	}
	return fields
}

// listener is the state of the L1 fence listener of a postgres backend.
func (p *pgcache) listener(t testing.TB, backend string) string {
	t.Helper()
	return p.info(t)["l1_"+backend+"_listener"]
}

// metrics scrapes /metrics into series ("name{labels}") and values.
func (p *pgcache) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	return scrape(t, p.admin)
}

// scrape reads the /metrics of an admin address, on a connection of its
// own that it closes.
func scrape(t testing.TB, admin string) map[string]float64 {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	return parseMetrics(t, resp.Body)
}

func parseMetrics(t testing.TB, r io.Reader) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// httpClient is a client of the test's own, whose idle connections are
// closed when the test ends (so no goroutine of it outlives the test).
func httpClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// eventually polls cond every 20ms until it holds or bound passes, for
// what the test cannot wait on directly (a server noticing a closed
// socket, a listener reconnecting). It returns how long it took.
func eventually(t testing.TB, bound time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// Process resources, to prove a case leaves nothing behind.

// resources are what a process holds.
type resources struct {
	goroutines int
	fds        int
}

func (r resources) String() string {
	return fmt.Sprintf("%d goroutines, %d fds", r.goroutines, r.fds)
}

// self counts this process's goroutines and open descriptors.
func self() resources {
	return resources{goroutines: runtime.NumGoroutine(), fds: countFDs("self")}
}

// countFDs counts the open descriptors of a process ("self" or a pid).
func countFDs(pid string) int {
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// settle polls, bounded, until this process holds no more than base plus
// slack (goroutines ending and sockets closing take a moment), and fails
// the test with what is left over when it does not.
func settle(t testing.TB, what string, base resources, slack int) resources {
	t.Helper()
	return settleExcept(t, what, base, slack, lingering)
}

// settleHTTP is settle while an HTTP front still runs: fasthttp keeps
// idle workers for MaxIdleWorkerDuration (10s) to reuse them, so they are
// not counted here; the leak check after the server stops counts them.
func settleHTTP(t testing.TB, what string, base resources, slack int) resources {
	t.Helper()
	return settleExcept(t, what, base, slack, func() int { return lingering() + idleHTTPWorkers() })
}

func settleExcept(t testing.TB, what string, base resources, slack int, except func() int) resources {
	t.Helper()
	var now resources
	for range 500 { // 10s
		now = self()
		if now.goroutines > base.goroutines+slack {
			now.goroutines -= except()
		}
		if now.goroutines <= base.goroutines+slack && now.fds <= base.fds+slack {
			return now
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("%s: %v left, from %v before", what, now, base)
	if now.goroutines > base.goroutines+slack {
		buf := make([]byte, 4<<20)
		t.Logf("goroutines:\n%s", summarizeStacks(string(buf[:runtime.Stack(buf, true)])))
	}
	if now.fds > base.fds+slack {
		t.Logf("descriptors:\n%s", describeFDs())
	}
	return now
}

// lingering counts the goroutines that outlive a stopped server by
// design: fasthttp's idle-worker cleaner, which sleeps
// MaxIdleWorkerDuration (10s) between looks at whether its pool stopped,
// and fasthttp's clock for the Date header, one per process from its
// first server on.
func lingering() int {
	return countStacks("fasthttp.(*workerPool).Start.func2", "fasthttp.updateServerDate.func1")
}

// idleHTTPWorkers counts fasthttp's workers waiting for a connection.
func idleHTTPWorkers() int { return countStacks("fasthttp.(*workerPool).workerFunc") }

// countStacks counts the goroutines whose stack mentions one of frames.
func countStacks(frames ...string) int {
	buf := make([]byte, 16<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(all, "\n\n") {
		for _, f := range frames {
			if strings.Contains(g, f) {
				n++
				break
			}
		}
	}
	return n
}

// leakCheck records this process's resources now and, when the test ends
// (after everything started later has been stopped: cleanups run last
// registered first), checks they came back.
func leakCheck(t testing.TB) {
	t.Helper()
	base := self()
	t.Cleanup(func() {
		after := settle(t, "after the case", base, 0)
		figure(t, "resources before %v, after %v", base, after)
	})
}

// summarizeStacks groups goroutines by their top frames.
func summarizeStacks(all string) string {
	counts := map[string]int{}
	for _, g := range strings.Split(all, "\n\n") {
		lines := strings.Split(g, "\n")
		var frames []string
		for i := 1; i+1 < len(lines) && len(frames) < 3; i += 2 {
			frames = append(frames, lines[i])
		}
		counts[strings.Join(frames, " <- ")]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%5d %s", n, k))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return strings.Join(out, "\n")
}

func describeFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	kinds := map[string]int{}
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if i := strings.IndexByte(l, '['); i > 0 {
			l = l[:i]
		}
		kinds[l]++
	}
	var out []string
	for k, n := range kinds {
		out = append(out, fmt.Sprintf("%5d %s", n, k))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// A minimal RESP client: one connection, one command at a time, every
// read and write bounded. Load workers use it rather than a pooled client,
// so a request is exactly one attempt (no retry hides an error) and its
// outcome is known: a reply, an error reply, or a broken connection.

// errReply is an error reply (-ERR …) from the server.
type errReply string

func (e errReply) Error() string { return string(e) }

type respConn struct {
	nc      net.Conn
	br      *bufio.Reader
	timeout time.Duration
}

func dialRESPTimeout(addr string, timeout time.Duration) (*respConn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &respConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), timeout: timeout}, nil
}

// dialRESP connects or fails the test; the connection is closed at its end.
func dialRESP(t testing.TB, addr string) *respConn {
	t.Helper()
	c, err := dialRESPTimeout(addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (c *respConn) Close() error { return c.nc.Close() }

// encode is a multibulk request.
func encode(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// Do sends one command and reads its reply: a status, integer or bulk as
// text ("" for nil: the cases never store an empty value), an array as its
// elements joined by "\r\n". An error reply is an errReply; any other error
// is the connection's.
func (c *respConn) Do(args ...string) (string, error) {
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.nc.Write(encode(args...)); err != nil {
		return "", err
	}
	return c.read()
}

func (c *respConn) read() (string, error) {
	line, err := c.br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errReply(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad array length %q", line)
		}
		var elems []string
		for range max(n, 0) {
			e, err := c.read()
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return strings.Join(elems, "\r\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// mustDo runs a command that must succeed.
func mustDo(t testing.TB, addr string, args ...string) string {
	t.Helper()
	c := dialRESP(t, addr)
	defer c.Close()
	v, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return v
}
