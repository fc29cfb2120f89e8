package backendtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The suite's expectations checked against redis-server 7: every script
// runs against it as it runs against a store, so a store that fails a
// script differs from Redis, not only from the reference.

var redisAddr string

func TestMain(m *testing.M) {
	r, err := testenv.StartRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = r.Addr()
	code := m.Run()
	r.Stop()
	os.Exit(code)
}

func TestScriptsAgainstRedis(t *testing.T) {
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
					runScript(t, dialRedis(t, proto), proto, tagged(t, ""), s)
				})
			}
		})
	}
}

// redisConn is a raw connection to redis-server, a target.
type redisConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRedis(t *testing.T, proto int) *redisConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", redisAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &redisConn{c: c, br: bufio.NewReader(c)}
	if proto == 3 {
		rc.do(t, 3, coll.Args("HELLO 3"))
	}
	return rc
}

func (rc *redisConn) do(t *testing.T, _ int, args [][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	n, err := readNode(rc.br)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(n.String())
}

// Every command of coll.Commands is in a script.
func TestScriptsCoverEveryCommand(t *testing.T) {
	used := map[string]bool{}
	for _, s := range scripts {
		for _, line := range s.lines {
			used[strings.ToLower(string(coll.Args(line)[0]))] = true
		}
	}
	for _, c := range coll.Commands {
		if !used[c.Name] {
			t.Errorf("no script runs %s", strings.ToUpper(c.Name))
		}
	}
}
