package conf

import (
	"sort"
	"strings"
	"testing"
)

// The example config shows every backend type and every kind of route, so
// a reader finds each one written out.
func TestExampleShowsEveryKind(t *testing.T) {
	cfg, err := Load(Source{File: "pgcache.example.yaml", Environ: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, b := range cfg.Backends {
		have["backend "+b["type"].(string)] = true
	}
	for _, r := range cfg.Routes {
		typ := cfg.Backends[r.Backend]["type"].(string)
		switch {
		case r.Table != "":
			d := r.Durability
			if d == "" {
				d = "standard"
			}
			have["kv table "+d] = true
		case r.SourceTable != "":
			have["table route"] = true
		default:
			have[typ+" route"] = true
		}
		if r.L1 != nil {
			have["l1"] = true
		}
		if r.Prefix != nil && *r.Prefix == "" {
			have["catch-all"] = true
		}
		if r.Name == "postgres" && r.Prefix != nil && *r.Prefix == "pg:" {
			have["route postgres, prefix pg:"] = true
		}
	}
	var missing []string
	for _, want := range []string{"backend memory", "backend postgres", "backend valkey",
		"kv table standard", "kv table async", "kv table unlogged", "table route", "l1",
		"memory route", "valkey route", "catch-all", "route postgres, prefix pg:"} {
		if !have[want] {
			missing = append(missing, want)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("conf/pgcache.example.yaml shows no %s", strings.Join(missing, ", no "))
	}
}
