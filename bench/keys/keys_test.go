package keys

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/oklog/ulid/v2"
)

func TestGenerate(t *testing.T) {
	s, err := Generate(5000)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5000 {
		t.Fatalf("Len = %d", s.Len())
	}
	// Each column is time-sorted: strictly increasing as text (UUIDv7 and
	// ULID sort by time as strings) and as a number (TSID).
	for _, k := range []Kind{UUIDv7, ULID} {
		col := s.Of(k)
		for i := 1; i < len(col); i++ {
			if col[i] <= col[i-1] {
				t.Fatalf("%s %d %q is not after %q", k, i, col[i], col[i-1])
			}
		}
	}
	prev := int64(0)
	for i, v := range s.TSID {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= prev {
			t.Fatalf("tsid %d %q is not after %d (%v)", i, v, prev, err)
		}
		prev = n
	}
	u := uuid.MustParse(s.UUIDv7[0])
	if u.Version() != 7 {
		t.Fatalf("version %d", u.Version())
	}
	id := ulid.MustParseStrict(s.ULID[0])
	for _, got := range []time.Time{time.UnixMilli(int64(id.Time())), TSIDTime(mustInt(t, s.TSID[0]))} {
		if d := time.Since(got); d < 0 || d > time.Minute {
			t.Fatalf("key made at %v, not now", got)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// More IDs in one millisecond than the counter holds borrow the next
// millisecond: never a repeat, never out of order.
func TestTSIDCounterOverflow(t *testing.T) {
	fixed := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	g := NewTSIDGen()
	g.now = func() time.Time { return fixed }
	var prev int64
	for i := range 3*(tsidCounterMax+1) + 5 {
		id := g.Next()
		if id <= prev {
			t.Fatalf("id %d: %d is not after %d", i, id, prev)
		}
		prev = id
	}
	if got := TSIDTime(prev).Sub(fixed); got != 3*time.Millisecond {
		t.Fatalf("after 3 full milliseconds the clock is %v ahead, want 3ms", got)
	}
	// A clock that catches up resets the counter.
	g.now = func() time.Time { return fixed.Add(time.Second) }
	if id := g.Next(); TSIDTime(id) != fixed.Add(time.Second) {
		t.Fatalf("TSIDTime = %v", TSIDTime(id))
	}
}

func TestTSIDConcurrent(t *testing.T) {
	g := NewTSIDGen()
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				id := g.Next()
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate %d", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen", "keys.txt")
	s, err := Generate(100)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if first, _, _ := strings.Cut(string(b), "\n"); first != header {
		t.Fatalf("first line %q", first)
	}
	got, err := Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds {
		if !slices.Equal(got.Of(k), s.Of(k)) {
			t.Fatalf("%s column differs after a round trip", k)
		}
	}
	if head, _ := Read(path, 10); head.Len() != 10 || head.ULID[9] != s.ULID[9] {
		t.Fatalf("Read(10) = %d keys", head.Len())
	}
}

func TestReadRefusesBadFiles(t *testing.T) {
	good, _ := Generate(1)
	row := good.UUIDv7[0] + "\t" + good.ULID[0] + "\t" + good.TSID[0]
	for _, tc := range []struct{ name, text, want string }{
		{"two columns", "a\tb\n", "2 columns"},
		{"not a uuid", "x" + row[1:] + "\n", "not a UUIDv7"},
		{"uuid v4", "0b9a5c8e-8f4b-4c6e-9d2a-1f3e5a7b9c0d" + row[36:] + "\n", "not a UUIDv7"},
		{"bad ulid", good.UUIDv7[0] + "\tnot-a-ulid\t" + good.TSID[0] + "\n", "not a ULID"},
		{"negative tsid", good.UUIDv7[0] + "\t" + good.ULID[0] + "\t-5\n", "not a TSID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.txt")
			os.WriteFile(path, []byte(header+"\n"+tc.text), 0o644)
			_, err := Read(path, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 2") {
				t.Fatalf("err = %v, want %q on line 2", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.txt")
	s, generated, err := Load(path, 50)
	if err != nil || !generated || s.Len() != 50 {
		t.Fatalf("absent file: %d keys, generated %v, %v", s.Len(), generated, err)
	}
	again, generated, err := Load(path, 20)
	if err != nil || generated || again.Len() != 20 || again.UUIDv7[19] != s.UUIDv7[19] {
		t.Fatalf("enough keys: %d, generated %v, %v; want the file's first 20", again.Len(), generated, err)
	}
	more, generated, err := Load(path, 80)
	if err != nil || !generated || more.Len() != 80 {
		t.Fatalf("too few keys: %d, generated %v, %v; want 80 new", more.Len(), generated, err)
	}
	os.WriteFile(path, []byte("garbage\n"), 0o644)
	if _, _, err := Load(path, 10); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a malformed file must be an error, not be overwritten: %v", err)
	}
	if _, _, err := Load(path, 0); err == nil {
		t.Fatal("Load(0) must be an error")
	}
}
