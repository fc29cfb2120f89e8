package coherence

import (
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestPayloadVersions: a listener reads fences of its own payload version
// and of relays from before the version field as they say; a payload of a
// version it does not know fences the whole cache (the safe default),
// while its canary still counts.
func TestPayloadVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		payload  string
		keyOnly  bool // fences key "a" of public.t and nothing else
		fenceAll bool // fences everything
		newer    int64
	}{
		{name: "current", payload: `{"v":1,"t":"public.t","k":["a"]}`, keyOnly: true},
		{name: "before the version field", payload: `{"t":"public.t","k":["a"]}`, keyOnly: true},
		{name: "with the relay's time", payload: `{"v":1,"t":"public.t","k":["a"],"a":1764621296123456}`, keyOnly: true},
		{name: "newer", payload: `{"v":2,"t":"public.t","k":["a"]}`, fenceAll: true, newer: 1},
		{name: "newer, other fields", payload: `{"v":2,"x":{"tables":["public.t"]}}`, fenceAll: true, newer: 1},
		{name: "not json", payload: `hello`, fenceAll: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFences(1 << 10)
			f.SetOnline(true)
			l := NewListener(f, ListenerOptions{}, zap.NewNop())
			tbl, other := f.Table("public.t"), f.Table("public.u")
			ha, hb, hu := f.Hash("public.t", "a"), f.Hash("public.t", "b"), f.Hash("public.u", "a")
			if ha&0x3ff == hb&0x3ff {
				t.Skip("a and b share a bucket under this seed") // 1 in 1024
			}
			tok := f.Token()
			l.handle(tc.payload)
			gotA, gotB, gotU := f.Valid(tok, tbl, ha), f.Valid(tok, tbl, hb), f.Valid(tok, other, hu)
			switch {
			case tc.keyOnly && (gotA || !gotB || !gotU):
				t.Errorf("want a fence on key a alone; valid after it: a %v, b %v, public.u a %v", gotA, gotB, gotU)
			case tc.fenceAll && (gotA || gotB || gotU || f.Stats.AllFences.Load() != 2):
				t.Errorf("want a whole-cache fence; valid after it: a %v, b %v, public.u a %v; whole-cache fences %d (1 from going online)",
					gotA, gotB, gotU, f.Stats.AllFences.Load())
			}
			if got := l.Stats.NewerPayloads.Load(); got != tc.newer {
				t.Errorf("NewerPayloads = %d, want %d", got, tc.newer)
			}
		})
	}
}

// TestNewerCanary: the canary of a newer relay comes back (the listener
// stays online through an upgrade), after a whole-cache fence.
func TestNewerCanary(t *testing.T) {
	f := NewFences(1 << 10)
	l := NewListener(f, ListenerOptions{}, zap.NewNop())
	l.canary = "me:1"
	l.handle(`{"v":2,"c":"me:1","t":"public.t"}`)
	if s, why := l.State(); s != StateOnline || !f.Online() {
		t.Fatalf("state %v (%s) after our canary came back in a newer payload", s, why)
	}
	if l.Stats.NewerPayloads.Load() != 1 || f.Stats.AllFences.Load() < 2 {
		t.Fatalf("newer payloads %d, whole-cache fences %d: the payload was not taken as a whole-cache fence",
			l.Stats.NewerPayloads.Load(), f.Stats.AllFences.Load())
	}
}

// TestPayloadTime: "a" is read as the relay's time, and readers built
// before it (one struct of "v", "t", "k", "c"; before "v", of "t", "k",
// "c") decode a payload with it as they decode one without.
func TestPayloadTime(t *testing.T) {
	const msg = `{"v":1,"t":"public.t","k":["a"],"a":1764621296123456}`
	p, known, err := readPayload(msg)
	if err != nil || !known {
		t.Fatalf("readPayload: known %v, %v", known, err)
	}
	if got, want := p.at(), time.UnixMicro(1764621296123456); !got.Equal(want) {
		t.Errorf("at = %v, want %v", got, want)
	}
	if p, _, _ := readPayload(`{"v":1,"t":"public.t"}`); !p.at().IsZero() {
		t.Errorf("a payload without a time has one: %v", p.at())
	}
	var old struct {
		Version int               `json:"v"`
		Table   string            `json:"t"`
		Keys    []json.RawMessage `json:"k"`
		Canary  string            `json:"c"`
	}
	if err := json.Unmarshal([]byte(msg), &old); err != nil || old.Version != 1 || old.Table != "public.t" || len(old.Keys) != 1 {
		t.Fatalf("a reader of version 1 without the time: %+v, %v", old, err)
	}
	var older struct {
		Table  string            `json:"t"`
		Keys   []json.RawMessage `json:"k"`
		Canary string            `json:"c"`
	}
	if err := json.Unmarshal([]byte(msg), &older); err != nil || older.Table != "public.t" || len(older.Keys) != 1 {
		t.Fatalf("a reader from before the version field: %+v, %v", older, err)
	}
}

// TestExpiredPayload: a notification of "#expired:public.t" fences
// nothing, its table's or another's, and tells the table's expiry
// watchers its keys; the fence watchers of public.t hear nothing of it.
// (A listener that does not know the prefix fences those keys of a table
// no tier has: a plain key payload, TestPayloadVersions.)
func TestExpiredPayload(t *testing.T) {
	f := NewFences(1 << 10)
	f.SetOnline(true)
	l := NewListener(f, ListenerOptions{}, zap.NewNop())
	var expired, fenced []string
	defer f.watch(expiredPrefix+"public.t", func(n fenceNote) { expired = append(expired, n.keys...) })()
	defer f.watch("public.t", func(n fenceNote) { fenced = append(fenced, n.keys...) })()
	tok := f.Token()
	l.handle(`{"v":1,"t":"#expired:public.t","k":["a",42],"a":1764621296123456,"d":"r:1"}`)
	if !f.Valid(tok, f.Table("public.t"), f.Hash("public.t", "a")) ||
		!f.Valid(tok, f.Table("#expired:public.t"), f.Hash("#expired:public.t", "a")) || f.Stats.AllFences.Load() != 1 {
		t.Errorf("an expired notification fenced (whole-cache fences %d, 1 from going online)", f.Stats.AllFences.Load())
	}
	if len(expired) != 2 || expired[0] != "a" || expired[1] != "42" || len(fenced) != 0 {
		t.Errorf("expiry watchers heard %q, fence watchers %q; want [a 42] and none", expired, fenced)
	}
}
