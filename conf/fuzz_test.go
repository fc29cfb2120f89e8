package conf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzConfig feeds any bytes to the config loader, as the file `pgcache run
// --config` reads (and SIGHUP reads again) and as the body of POST /load.
// Both ways give the same answer: the same config, or both an error that
// says something. A config that loads is valid, and its redacted JSON (what
// GET /config shows) loads back.
func FuzzConfig(f *testing.F) {
	example, err := os.ReadFile("pgcache.example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		"",
		"{}",
		oneRoute,
		"listen: {resp: '127.0.0.1:7000', http: ''}\nresp: {max_clients: 10, idle_timeout: 1m}\n" + oneRoute,
		`backends:
  pg: {type: postgres, dsn: "postgres://app:s3cret@127.0.0.1/app", max_conns: 8}
  mem: {type: memory, max_bytes: 64MiB}
routes:
  - {name: kv, prefix: "pg:", backend: pg, table: kv, durability: unlogged, l1: {max_bytes: 16MiB, ttl: 30s}}
  - {name: users, backend: pg, source_table: public.users, attach: auto, l1: {max_bytes: 1MiB}}
  - {name: memory, prefix: "", backend: mem}
`,
		"backends:\n  vk: {type: valkey, addrs: ['127.0.0.1:6380'], client_cache: {ttl: 1m}}\nroutes:\n  - {name: v, prefix: '', backend: vk}\n",
		"auth: {requirepass: pw, users: [{name: a, password: b}], http_token: t}\n" + oneRoute,
		"routes: [",
		"routes: [{name: a, backend: nope}]",
		"resp: {max_bulk_bytes: 1EiB}",
		"shutdown_timeout: -1s",
		"listen: {resp: 'not an address'}",
		"backends: {m: {type: memory}}\nroutes: [{name: 'a/b', prefix: '', backend: m}]",
		"unknown_key: 1",
		"\x00\xff",
		"a: &a [*a, *a]",
	} {
		f.Add([]byte(seed))
	}
	file := filepath.Join(f.TempDir(), "pgcache.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fromFile, errFile := Load(Source{File: file, Environ: noEnv})
		fromBytes, errBytes := Load(Source{Bytes: append([]byte{}, data...), Environ: noEnv})
		switch {
		case (errFile == nil) != (errBytes == nil):
			t.Fatalf("the file and the same bytes posted disagree:\nfile:  %v\nbytes: %v", errFile, errBytes)
		case errFile != nil:
			if strings.TrimSpace(errFile.Error()) == "" || strings.TrimSpace(errBytes.Error()) == "" {
				t.Fatalf("an error that says nothing: %q, %q", errFile, errBytes)
			}
			return
		case !reflect.DeepEqual(fromFile, fromBytes):
			t.Fatalf("the file and the same bytes posted load differently:\nfile:  %+v\nbytes: %+v", fromFile, fromBytes)
		}
		if err := fromFile.Validate(); err != nil {
			t.Fatalf("a loaded config fails Validate: %v", err)
		}
		js, err := fromFile.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		if !json.Valid(js) {
			t.Fatalf("Redacted is not JSON: %s", js)
		}
		if _, err := Load(Source{Bytes: js, Environ: noEnv}); err != nil {
			t.Fatalf("GET /config's JSON does not load back: %v\n%s", err, js)
		}
	})
}
