package postgres

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/certs/certstest"
	"github.com/pgcache/pgcache/internal/rawio"
	"github.com/pgcache/pgcache/internal/testenv"
)

// A DSN with sslmode=verify-full reaches a server with TLS on: sessions
// are TLS over raw system calls (rawio), and a SET and GET through them
// work. A server certificate the client does not trust is refused.
func TestTLS(t *testing.T) {
	srv := testenv.Postgres(t)
	files := certstest.Generate(t, t.TempDir())
	// The server's certificate and key, in its data directory, owned by
	// the account it runs as: PostgreSQL refuses a key others can read.
	st, err := os.Stat(srv.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Sys().(*syscall.Stat_t)
	for src, dst := range map[string]string{files.ServerCert: "server.crt", files.ServerKey: "server.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(srv.DataDir, dst)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, int(owner.Uid), int(owner.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	admin := srv.Pool(t)
	testenv.Exec(t, admin, "ALTER SYSTEM SET ssl = on")
	testenv.Exec(t, admin, "SELECT pg_reload_conf()")

	dsn := func(root string) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=verify-full&sslrootcert=%s&connect_timeout=5",
			srv.User, srv.Port, srv.Database, root)
	}
	d := newDriver(t, Options{DSN: dsn(files.CA)})
	ctx := testCtx(t)
	// The reload is asynchronous: wait until the server speaks TLS.
	for end := time.Now().Add(30 * time.Second); ; {
		err := d.pool.Ping(ctx)
		if err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no TLS session 30 s after ssl = on: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	if _, err := s.Set(ctx, "k", []byte("over tls"), backends.SetOptions{}); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	if v, ok, err := s.Get(ctx, "k"); err != nil || !ok || string(v) != "over tls" {
		t.Fatalf("GET over TLS = %q, %v, %v", v, ok, err)
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tc, ok := conn.Conn().PgConn().Conn().(*tls.Conn)
	if !ok {
		t.Fatalf("session over %T, want *tls.Conn", conn.Conn().PgConn().Conn())
	}
	if _, ok := tc.NetConn().(*rawio.Conn); !ok {
		t.Errorf("TLS over %T, want *rawio.Conn", tc.NetConn())
	}
	var inTLS bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&inTLS); err != nil || !inTLS {
		t.Errorf("pg_stat_ssl.ssl = %v, %v: the server does not see TLS", inTLS, err)
	}

	// A client that trusts another CA refuses the server's certificate.
	other := certstest.Generate(t, t.TempDir())
	bad := newDriver(t, Options{DSN: dsn(other.CA)})
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bad.pool.Ping(bctx); err == nil {
		t.Error("a client that does not trust the server's CA connected")
	}
}
