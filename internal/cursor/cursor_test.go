package cursor

import (
	"testing"
	"time"
)

func TestPutTake(t *testing.T) {
	tab := New[string](1, 1<<53, 0, 0, nil)
	id := tab.Put("a")
	if id < 1 || id >= 1<<53 {
		t.Fatalf("id %d outside [1, 2^53)", id)
	}
	if p, ok := tab.Take(id); !ok || p != "a" {
		t.Fatalf("Take = %q, %v", p, ok)
	}
	if _, ok := tab.Take(id); ok {
		t.Fatal("a position was taken twice")
	}
	if _, ok := tab.Take(12345); ok {
		t.Fatal("an id never issued was found")
	}
}

// Past max positions the least recently put one is dropped and released.
func TestBounded(t *testing.T) {
	var dropped []int
	tab := New(1, 1<<53, 3, 0, func(p int) { dropped = append(dropped, p) })
	ids := make([]uint64, 5)
	for i := range ids {
		ids[i] = tab.Put(i)
	}
	if n := tab.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	if len(dropped) != 2 || dropped[0] != 0 || dropped[1] != 1 {
		t.Fatalf("dropped %v, want [0 1]", dropped)
	}
	if _, ok := tab.Take(ids[0]); ok {
		t.Fatal("a dropped position was found")
	}
	if p, ok := tab.Take(ids[4]); !ok || p != 4 {
		t.Fatalf("Take newest = %d, %v", p, ok)
	}
	tab.Close()
	if len(dropped) != 4 || tab.Len() != 0 {
		t.Fatalf("after Close: dropped %v, Len %d", dropped, tab.Len())
	}
}

// A position unused for longer than idle is dropped at the next Put.
func TestIdle(t *testing.T) {
	var dropped int
	tab := New(1, 1<<53, 0, time.Millisecond, func(int) { dropped++ })
	old := tab.Put(1)
	time.Sleep(5 * time.Millisecond)
	tab.Put(2)
	if _, ok := tab.Take(old); ok || dropped != 1 {
		t.Fatalf("an idle position was kept (dropped %d)", dropped)
	}
}

func TestNarrowRange(t *testing.T) {
	tab := New[int](1<<52, 1<<52+4, 0, 0, nil)
	seen := map[uint64]bool{}
	for i := range 4 {
		id := tab.Put(i)
		if id < 1<<52 || id >= 1<<52+4 || seen[id] {
			t.Fatalf("id %d out of range or repeated", id)
		}
		seen[id] = true
	}
	tab.Put(4) // the range is full: the oldest makes room
	if n := tab.Len(); n != 4 {
		t.Fatalf("Len = %d, want 4", n)
	}
}
