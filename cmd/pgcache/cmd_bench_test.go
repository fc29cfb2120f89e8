package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCommandLine(t *testing.T) {
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.txt")
	for _, tc := range []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"help", []string{"bench", "--help"}, exitOK, "", "engines, in run order:\n  memory\n  valkey"},
		{"unknown engine", []string{"bench", "quick", "--engines", "memory,mongo", "--keys-file", keysFile, "--out", dir},
			exitUsage, "", `unknown engine "mongo" (known: memory, valkey, standard-postgresql`},
		{"unknown preset", []string{"bench", "forever", "--keys-file", keysFile}, exitError, "", `preset "forever": not one of quick, medium, long`},
		{"bad memlimit", []string{"bench", "--server-memlimit", "lots"}, exitUsage, "", "--server-memlimit"},
		{"stray argument", []string{"bench", "quick", "extra"}, exitUsage, "", "unexpected arguments: extra"},
		{"gen-targets", []string{"bench", "gen-targets", "--keys", "25", "--keys-file", keysFile}, exitOK, "wrote 25 keys", ""},
		{"gen-targets without keys", []string{"bench", "gen-targets", "--keys", "0"}, exitUsage, "", "at least 1"},
		{"report without a dir", []string{"bench", "report"}, exitUsage, "", "usage: pgcache bench report DIR"},
		{"report of no results", []string{"bench", "report", dir}, exitError, "", "results.jsonl: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runCommand(tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.errOut) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant stdout with %q, stderr with %q", code, tc.code, out.String(), errOut.String(), tc.out, tc.errOut)
			}
		})
	}
	b, err := os.ReadFile(keysFile)
	if err != nil || bytes.Count(b, []byte("\n")) != 26 {
		t.Fatalf("keys file: %v, %d lines", err, bytes.Count(b, []byte("\n")))
	}
}
