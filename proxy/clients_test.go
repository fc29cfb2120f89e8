package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// Real clients connect with their default handshakes and do the basics.

func TestGoRedis(t *testing.T) {
	ts := startServer(t, Config{})
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: proto, ClientName: "test-client"})
			defer rdb.Close()
			k := fmt.Sprintf("goredis%d:", proto)
			if err := rdb.Set(ctx, k+"a", "1", 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if v, err := rdb.Get(ctx, k+"a").Result(); err != nil || v != "1" {
				t.Fatalf("GET = %q, %v", v, err)
			}
			if _, err := rdb.Get(ctx, k+"nosuch").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET of a missing key: %v, want redis.Nil", err)
			}
			if err := rdb.MSet(ctx, k+"b", "2", "pg:"+k+"c", "3").Err(); err != nil {
				t.Fatalf("MSET: %v", err)
			}
			vals, err := rdb.MGet(ctx, k+"a", k+"b", "pg:"+k+"c", k+"nosuch").Result()
			if err != nil || fmt.Sprint(vals) != "[1 2 3 <nil>]" {
				t.Fatalf("MGET = %v, %v", vals, err)
			}
			if n, err := rdb.Incr(ctx, k+"a").Result(); err != nil || n != 2 {
				t.Fatalf("INCR = %d, %v", n, err)
			}
			if ok, err := rdb.SetNX(ctx, k+"a", "x", time.Minute).Result(); err != nil || ok {
				t.Fatalf("SETNX on an existing key = %v, %v", ok, err)
			}
			if err := rdb.Expire(ctx, k+"a", time.Minute).Err(); err != nil {
				t.Fatalf("EXPIRE: %v", err)
			}
			if d, err := rdb.TTL(ctx, k+"a").Result(); err != nil || d != time.Minute {
				t.Fatalf("TTL = %v, %v", d, err)
			}
			if _, err := rdb.Incr(ctx, k+"b").Result(); err != nil {
				t.Fatalf("INCR: %v", err)
			}
			if err := rdb.Set(ctx, k+"s", "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Incr(ctx, k+"s").Err(); err == nil || err.Error() != "ERR value is not an integer or out of range" {
				t.Fatalf("INCR of a string: %v", err)
			}
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range 100 {
					p.Set(ctx, fmt.Sprintf("%sp%d", k, i), i, 0)
					p.Get(ctx, fmt.Sprintf("%sp%d", k, i))
				}
				return nil
			})
			if err != nil || len(cmds) != 200 || cmds[199].(*redis.StringCmd).Val() != "99" {
				t.Fatalf("pipeline: %d commands, %v", len(cmds), err)
			}
			if name, err := rdb.ClientGetName(ctx).Result(); err != nil || name != "test-client" {
				t.Fatalf("CLIENT GETNAME = %q, %v", name, err)
			}
			if n, err := rdb.Del(ctx, k+"a", k+"b", "pg:"+k+"c").Result(); err != nil || n != 3 {
				t.Fatalf("DEL = %d, %v", n, err)
			}
		})
	}
}

func TestValkeyGo(t *testing.T) {
	ts := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{ts.addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("valkey.NewClient: %v", err)
	}
	defer client.Close()
	do := func(cmd valkey.Completed) valkey.ValkeyResult { return client.Do(ctx, cmd) }
	if err := do(client.B().Set().Key("vk:a").Value("1").Build()).Error(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if v, err := do(client.B().Get().Key("vk:a").Build()).ToString(); err != nil || v != "1" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if err := do(client.B().Get().Key("vk:nosuch").Build()).Error(); !valkey.IsValkeyNil(err) {
		t.Fatalf("GET of a missing key: %v, want nil", err)
	}
	if err := do(client.B().Mset().KeyValue().KeyValue("vk:b", "2").KeyValue("pg:vk:c", "3").Build()).Error(); err != nil {
		t.Fatalf("MSET: %v", err)
	}
	vals, err := do(client.B().Mget().Key("vk:a", "vk:b", "pg:vk:c", "vk:nosuch").Build()).ToArray()
	if err != nil || len(vals) != 4 {
		t.Fatalf("MGET = %v, %v", vals, err)
	}
	for i, want := range []string{"1", "2", "3"} {
		if got, err := vals[i].ToString(); err != nil || got != want {
			t.Errorf("MGET[%d] = %q, %v; want %q", i, got, err, want)
		}
	}
	if !vals[3].IsNil() {
		t.Errorf("MGET[3] is not nil")
	}
	if n, err := do(client.B().Incr().Key("vk:a").Build()).AsInt64(); err != nil || n != 2 {
		t.Fatalf("INCR = %d, %v", n, err)
	}
	// valkey-go pipelines concurrent commands on one connection.
	errs := make(chan error, 50)
	for i := range 50 {
		go func() {
			errs <- do(client.B().Incrby().Key("vk:n").Increment(int64(i)).Build()).Error()
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatalf("INCRBY: %v", err)
		}
	}
	if n, err := do(client.B().Get().Key("vk:n").Build()).AsInt64(); err != nil || n != 49*50/2 {
		t.Fatalf("sum of INCRBYs = %d, %v", n, err)
	}
}

// redisCLI runs redis-cli against the server.
func redisCLI(t *testing.T, addr string, stdin []byte, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is not installed: apt-get install redis-tools (or redis-server)")
	}
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestRedisCLI(t *testing.T) {
	ts := startServer(t, Config{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "a", "b"}, "OK\n"},
		{[]string{"get", "a"}, "b\n"},
		{[]string{"-3", "get", "a"}, "b\n"},
		{[]string{"-3", "get", "nosuch"}, "\n"},
		{[]string{"mget", "a", "nosuch"}, "b\n\n"},
		{[]string{"incr", "counter"}, "1\n"},
		{[]string{"dbsize"}, "2\n"},
		{[]string{"nosuch"}, "ERR unknown command 'nosuch', with args beginning with: \n\n"},
	} {
		if got := redisCLI(t, ts.addr, nil, tc.args...); got != tc.want {
			t.Errorf("redis-cli %q = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestRedisCLIPipe is redis-cli's mass insertion: the raw protocol on
// stdin, then an ECHO it waits for.
func TestRedisCLIPipe(t *testing.T) {
	ts := startServer(t, Config{})
	const n = 10000
	var in bytes.Buffer
	for i := range n {
		in.WriteString(encode("SET", fmt.Sprintf("mass:%d", i), fmt.Sprintf("value %d", i)))
	}
	out := redisCLI(t, ts.addr, in.Bytes(), "--pipe")
	if !strings.Contains(out, fmt.Sprintf("errors: 0, replies: %d", n)) {
		t.Fatalf("redis-cli --pipe:\n%s", out)
	}
	c := dial(t, ts.addr)
	if got := c.do("DBSIZE"); got != fmt.Sprintf(":%d\r\n", n) {
		t.Errorf("DBSIZE after mass insertion = %q", got)
	}
	if got := c.do("GET", "mass:9999"); got != "$10\r\nvalue 9999\r\n" {
		t.Errorf("GET mass:9999 = %q", got)
	}
}
