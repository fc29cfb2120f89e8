package route

import (
	"context"
	"sync"
	"testing"

	"github.com/pgcache/pgcache/backends/coll"
)

// writes records the writes a Router reports.
type writes struct {
	mu   sync.Mutex
	keys []string
}

func (w *writes) Wrote(_ context.Context, _ *Route, key string) {
	w.mu.Lock()
	w.keys = append(w.keys, key)
	w.mu.Unlock()
}

func (*writes) Active() bool { return true }

// A blocking command that found nothing to pop reports no write: a
// blocked client runs it again on each report of its keys, so a report of
// its own run woke it again, and it spun. One that popped reports its
// keys as any write does.
func TestBlockingFoundNothingReportsNoWrite(t *testing.T) {
	tab := table(t, map[string][]string{"all": {""}})
	router := NewRouter(tab)
	w := &writes{}
	router.OnWrite(w)
	r, _ := tab.ForKey("q")
	do := func(line ...string) coll.Command {
		t.Helper()
		args := make([][]byte, len(line))
		for i, a := range line {
			args[i] = []byte(a)
		}
		op := parseColl(t, args)
		keys := make([]string, len(op.Request().KeyAt))
		for i, at := range op.Request().KeyAt {
			keys[i] = line[at]
		}
		if err := r.Backend.Do(context.Background(), keys, op); err != nil {
			t.Fatal(err)
		}
		return op
	}
	for _, line := range [][]string{
		{"blpop", "q", "p", "0"},
		{"bzpopmin", "z", "0"},
		{"blmove", "q", "dst", "left", "right", "0"},
	} {
		if op := do(line...); op.(coll.Blocker).Ready() {
			t.Fatalf("%v found something", line)
		}
	}
	if len(w.keys) != 0 {
		t.Fatalf("blocking commands that found nothing reported writes of %q", w.keys)
	}
	do("rpush", "q", "x")
	w.keys = nil
	do("blpop", "p", "q", "0")
	if len(w.keys) != 2 {
		t.Fatalf("a BLPOP that popped reported %q, want its two keys", w.keys)
	}
}
