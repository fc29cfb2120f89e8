package coll

import "testing"

// TestSmallCommands: a command a pipelined run may hold (Spec.Small) is
// on one key and never blocks: a run is one call on one key, answered
// once it returns.
func TestSmallCommands(t *testing.T) {
	n := 0
	for _, c := range Commands {
		if c.Small == nil {
			continue
		}
		n++
		if c.Blocking || c.Movable || c.First != 1 || c.Last != 1 {
			t.Errorf("%s is Small but blocks or has other keys than the first", c.Name)
		}
	}
	if n == 0 {
		t.Fatal("no command is Small")
	}
	if noCount(Args("lpop k 2")) || !noCount(Args("lpop k")) {
		t.Error("noCount: LPOP with a count is not small, without one it is")
	}
}
