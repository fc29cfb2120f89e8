package redissuite

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRedisSuitePreview (PGCACHE_REDIS_SUITE_TARGET=pgcache-preview; not
// run otherwise) shows what TestRedisSuite would count once pgcache answers
// the commands the suite sends before its first test: each unit gets a
// fresh pgcache behind a relay that turns the set-up's FLUSHALL and
// FUNCTION FLUSH — the first two commands of the unit's first connection —
// into PING, whose reply the suite does not read. Every later command,
// FLUSHALL in a test included, reaches pgcache unchanged. It asserts no
// minimum: it is a preview for whoever builds the commands, and goes away
// when pgcache has FLUSHALL and FUNCTION FLUSH.
func TestRedisSuitePreview(t *testing.T) {
	if os.Getenv("PGCACHE_REDIS_SUITE_TARGET") != "pgcache-preview" {
		t.Skip("a preview: PGCACHE_REDIS_SUITE_TARGET=pgcache-preview runs it")
	}
	dir, tclsh, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	units, _ := envUnits(Units17)
	output := outputFile(t)
	res := &Result{Addr: "pgcache behind the set-up relay"}
	start := time.Now()
	for _, unit := range units {
		t.Run(strings.ReplaceAll(unit, "/", "_"), func(t *testing.T) {
			relay := startSetupRelay(t, startPgcache(t))
			r, err := Run(budget(t), tclsh, Options{Dir: dir, Addr: relay, Units: []string{unit}, Output: output})
			if err != nil {
				t.Fatal(err)
			}
			res.Units = append(res.Units, r.Units...)
		})
	}
	var report strings.Builder
	res.WriteReport(&report, true)
	t.Logf("preview, %v:\n%s", time.Since(start).Round(time.Second), report.String())
}

// startSetupRelay listens on a free loopback port and relays each
// connection to target, rewriting the first connection's first two
// commands when they are the suite's set-up (see TestRedisSuitePreview).
func startSetupRelay(t *testing.T, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() {
				defer wg.Done()
				io.Copy(c, s)
				c.Close()
			}()
			go func(first bool) {
				defer wg.Done()
				relayCommands(s, c, first)
				s.Close()
			}(first)
		}
	}()
	return l.Addr().String()
}

// relayCommands copies client's commands to server; on the set-up
// connection its first two are rewritten when they are FLUSHALL and
// FUNCTION FLUSH.
func relayCommands(server io.Writer, client io.Reader, setup bool) {
	br := bufio.NewReader(client)
	if setup {
		for _, want := range []string{"flushall", "function flush"} {
			raw, args, err := readCommand(br)
			if err != nil {
				return
			}
			if strings.EqualFold(strings.Join(args, " "), want) {
				raw = []byte("*1\r\n$4\r\nPING\r\n")
			}
			if _, err := server.Write(raw); err != nil {
				return
			}
		}
	}
	io.Copy(server, br)
}

// readCommand reads one RESP command, multibulk or inline, and returns its
// bytes and its arguments.
func readCommand(br *bufio.Reader) ([]byte, []string, error) {
	line, err := br.ReadBytes('\n')
	if err != nil {
		return nil, nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		return line, strings.Fields(string(line)), nil
	}
	raw := bytes.Clone(line)
	n, _ := strconv.Atoi(strings.TrimSpace(string(line[1:])))
	var args []string
	for range n {
		hdr, err := br.ReadBytes('\n')
		if err != nil {
			return nil, nil, err
		}
		raw = append(raw, hdr...)
		size, _ := strconv.Atoi(strings.TrimSpace(string(hdr[1:])))
		body := make([]byte, max(size, 0)+2)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, nil, err
		}
		raw = append(raw, body...)
		args = append(args, string(body[:max(size, 0)]))
	}
	return raw, args, nil
}
