package main

import (
	"bytes"
	"strings"
	"testing"
)

// `pgcache` alone prints the usage on stderr and exits 2, as a command
// line that does nothing should; `pgcache help` prints it on stdout and
// exits 0.
func TestNoArgumentsIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runCommand(nil, &out, &errOut); code != exitUsage {
		t.Errorf("pgcache with no arguments exited %d, want %d", code, exitUsage)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "usage: pgcache <command>") {
		t.Errorf("stdout %q, stderr %q: want the usage on stderr", out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := runCommand([]string{"help"}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "usage: pgcache <command>") {
		t.Errorf("pgcache help: exit %d, stdout %q", code, out.String())
	}
}
