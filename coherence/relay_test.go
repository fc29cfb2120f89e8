package coherence

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/coherence/fence"
)

func TestBatchPayloads(t *testing.T) {
	const drained = 1764621296123456
	b := batch{drained: drained}
	at := func(v int64) *int64 { return &v }
	b.add(canaryTable, []byte(`"me:1"`), nil)
	b.add("public.kv", []byte(`["a", "b"]`), at(drained-300))
	b.add("public.kv", []byte(`["b", "c"]`), at(drained-500)) // the earliest is the table's
	b.add("public.t", nil, nil)                               // TRUNCATE, logged without a time
	b.add("public.t", []byte(`[1]`), nil)
	long := strings.Repeat("x", maxPayload)
	b.add("public.big", []byte(`["`+long+`", "short"]`), nil)
	var many []string
	for i := range 2000 {
		many = append(many, `"key-`+strings.Repeat("0", 4)+string(rune('a'+i%26))+`-`+itoa(i)+`"`)
	}
	b.add("public.many", []byte("["+strings.Join(many, ",")+"]"), at(drained-100))

	b.committedAfter(drained - 400) // a drain began then and took all it saw
	b.through = drained - 50        // and this one took all it saw too
	out := b.payloads()
	if last := out[len(out)-1]; last != `{"v":1,"c":"me:1"}` {
		t.Fatalf("the canary is not last: %s", last)
	}
	for i, p := range out {
		f, _, _ := readPayload(p)
		if want := map[bool]int64{true: b.through}[i == len(out)-2]; f.Through != want {
			t.Fatalf("payload %d of %d, %.60q…: \"s\" %d, want %d (only on the last fence notification)", i, len(out), p, f.Through, want)
		}
	}
	seen := map[string]map[string]bool{}
	whole := map[string]bool{}
	for _, p := range out {
		if len(p) > maxPayload {
			t.Fatalf("payload of %d bytes, over %d", len(p), maxPayload)
		}
		f, known, err := readPayload(p)
		if err != nil || !known || f.Version != PayloadVersion {
			t.Fatalf("payload %q: version %d known %v, %v", p, f.Version, known, err)
		}
		if f.Canary != "" {
			continue
		}
		// public.kv's fences were logged before the earlier drain but
		// committed after it; public.t's have no time (the drain's).
		want := map[string]int64{"public.kv": drained - 400, "public.t": drained, "public.big": drained, "public.many": drained - 100}[f.Table]
		if f.At != want {
			t.Fatalf("payload %.60q…: time %d, want %d", p, f.At, want)
		}
		if f.Keys == nil {
			whole[f.Table] = true
			continue
		}
		if seen[f.Table] == nil {
			seen[f.Table] = map[string]bool{}
		}
		for _, k := range f.Keys {
			key, _ := fence.KeyOf(k)
			seen[f.Table][key] = true
		}
	}
	if len(seen["public.kv"]) != 3 {
		t.Errorf("public.kv keys = %v, want a b c once each", seen["public.kv"])
	}
	if !whole["public.t"] || seen["public.t"] != nil {
		t.Errorf("a table fence must absorb the table's key fences: whole=%v keys=%v", whole["public.t"], seen["public.t"])
	}
	if !whole["public.big"] {
		t.Errorf("a key too long for a notification must fence its table: keys=%v", seen["public.big"])
	}
	if len(seen["public.many"]) != 2000 || whole["public.many"] {
		t.Errorf("2000 keys split over notifications: got %d keys, whole=%v", len(seen["public.many"]), whole["public.many"])
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
