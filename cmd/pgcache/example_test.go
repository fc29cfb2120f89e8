package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// conf/pgcache.example.yaml serves, every route of it, once its dsn and
// addrs point at a PostgreSQL that has its users table and at a Valkey.
func TestExampleConfigServes(t *testing.T) {
	pg := testenv.Postgres(t)
	vk := testenv.RedisFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg.CreateDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	dsn := pg.DSNFor("app")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE users (id bigint PRIMARY KEY, name text); INSERT INTO users VALUES (7, 'ada')"); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile("../../conf/pgcache.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(b)
	for _, r := range [][2]string{
		{`"postgres://pgcache@127.0.0.1:5432/app"`, `"` + dsn + `"`},
		{`["127.0.0.1:6380"]`, `["` + vk.Addr() + `"]`},
		{"level: info ", "level: error "},
	} {
		if !strings.Contains(yaml, r[0]) {
			t.Fatalf("the example config has no %s to replace", r[0])
		}
		yaml = strings.Replace(yaml, r[0], r[1], 1)
	}
	// Its listen addresses give way to free ports.
	srv := pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: yaml}).Server

	c := redis.NewClient(&redis.Options{Addr: srv.Addr("resp"), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	for _, kv := range [][2]string{
		{"pg:1", "standard"}, {"event:1", "async"}, {"session:0190a3c4-1111-7000-8000-000000000001", "unlogged"},
		{"rl:1", "valkey"}, {"anything", "memory"},
	} {
		if err := c.Set(ctx, kv[0], kv[1], time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", kv[0], err)
		}
		if got, err := c.Get(ctx, kv[0]).Result(); err != nil || got != kv[1] {
			t.Errorf("GET %s = %q, %v; want %q", kv[0], got, err, kv[1])
		}
	}
	for _, key := range []string{"user:7", "CRUD:app.public.users:7"} {
		if got, err := c.Get(ctx, key).Result(); err != nil || got != `{"id":7,"name":"ada"}` {
			t.Errorf("GET %s = %q, %v; want row 7", key, got, err)
		}
	}
	if got, err := vk.Do(ctx, "GET", "rate:1"); err != nil || got != "valkey" {
		t.Errorf("Valkey holds rate:1 = %q, %v; want the route's value under its name", got, err)
	}
	resp, err := http.Get("http://" + srv.Addr("http") + "/postgres/get?id=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "standard" {
		t.Errorf("GET /postgres/get?id=1: %d %q", resp.StatusCode, body)
	}
}
