package pgcachetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary builds cmd/pgcache once per test binary, without the race
// detector and with -trimpath as `make build` has it (so the packages it
// compiled are reused), and returns its path: tests that run pgcache as a
// child process (StartProcess) serve at full speed whatever flags the test
// binary has. The binary is left in a temporary directory; RemoveBinary
// removes it.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out, err := exec.Command(goTool, "env", "GOMOD").Output()
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if err != nil || root == "." {
			binErr = fmt.Errorf("go env GOMOD: %v (%s)", err, out)
			return
		}
		dir, err := os.MkdirTemp("", "pgcache-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "pgcache")
		cmd := exec.Command(goTool, "build", "-trimpath", "-o", binPath, "./cmd/pgcache")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/pgcache: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// RemoveBinary removes what Binary built; the TestMain of a package that
// calls StartProcess calls it.
func RemoveBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}
