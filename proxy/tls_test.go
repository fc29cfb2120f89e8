package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/certs"
	"github.com/pgcache/pgcache/internal/certs/certstest"
)

// RESP over TLS, and a TLS client that pipelines reads of large values
// and never reads the replies: with no descriptor to write to without
// waiting, the server waits WriteTimeout for it, then drops it.
func TestTLSClientThatDoesNotRead(t *testing.T) {
	ts := startServer(t, Config{WriteTimeout: 200 * time.Millisecond})
	f := certstest.Generate(t, t.TempDir())
	cfg, err := certs.Load(certs.Files{CertFile: f.ServerCert, KeyFile: f.ServerKey})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.Serve(tls.NewListener(ln, certs.NewReloadable(cfg).Config()))

	pem, _ := os.ReadFile(f.CA)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	nc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
	if got := c.do("SET", "big", strings.Repeat("v", 1<<20)); got != "+OK\r\n" {
		t.Fatalf("SET over TLS = %q", got)
	}
	go func() {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		nc.Write([]byte(strings.Repeat(encode("GET", "big"), 200)))
	}()
	eventually(t, "the client that does not read is dropped", func() bool {
		return ts.Stats().ConnectedClients.Load() == 0
	})
	serves(t, ts.addr)
}
