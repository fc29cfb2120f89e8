package subs

import (
	"slices"
	"testing"
)

func TestSet(t *testing.T) {
	var s Set[int]
	if s.Any() || len(s.List(nil)) != 0 {
		t.Fatal("the zero Set is not empty")
	}
	c1, c2 := s.Add(1), s.Add(2)
	got := s.List(nil)
	slices.Sort(got)
	if !s.Any() || !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("after two Adds: %v", got)
	}
	c1()
	c1() // twice: no effect
	if got := s.List(nil); !slices.Equal(got, []int{2}) {
		t.Fatalf("after cancelling 1 twice: %v", got)
	}
	c2()
	if s.Any() || len(s.List(nil)) != 0 {
		t.Fatal("not empty after every cancel")
	}
}
