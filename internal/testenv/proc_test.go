package testenv

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestProcessTree(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tree := ProcessTree(os.Getpid())
	if tree[0] != os.Getpid() || !slices.Contains(tree, cmd.Process.Pid) {
		t.Fatalf("ProcessTree(%d) = %v, want it and its child %d", os.Getpid(), tree, cmd.Process.Pid)
	}
	if ProcessTree(0) != nil {
		t.Fatal("ProcessTree(0) must be empty")
	}
}
