package frameworks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// agentTimeout bounds one request to an agent.
const agentTimeout = 30 * time.Second

// agent is a Node or Python app driven one request at a time: a JSON
// object per line on its stdin, its reply a JSON object per line on its
// stdout ({"error": …} when the request failed). It first prints
// {"ready": true}.
type agent struct {
	file   string
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *testenv.SyncBuffer
}

func startAgent(t *testing.T, interp, file string, env []string) *agent {
	t.Helper()
	cmd := exec.Command(interp, file)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	a := &agent{file: file, lines: make(chan []byte, 16), stderr: &testenv.SyncBuffer{}}
	cmd.Stderr = a.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s %s: %v", interp, file, err)
	}
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			a.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		a.stdin.Close() // the app ends at the end of its input
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v; stderr:\n%s", file, err, a.stderr)
			}
		case <-time.After(agentTimeout):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not end after its input was closed; stderr:\n%s", file, a.stderr)
		}
	})
	var ready struct {
		Ready bool `json:"ready"`
	}
	a.recv(t, &ready)
	if !ready.Ready {
		t.Fatalf("%s did not start", file)
	}
	return a
}

// call sends req and decodes the reply into rep (nil: only checked for
// an error).
func (a *agent) call(t *testing.T, req map[string]any, rep any) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("%s: write %s: %v; stderr:\n%s", a.file, b, err, a.stderr)
	}
	a.recv(t, rep)
}

func (a *agent) recv(t *testing.T, rep any) {
	t.Helper()
	select {
	case line, ok := <-a.lines:
		if !ok {
			t.Fatalf("%s ended; stderr:\n%s", a.file, a.stderr)
		}
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: reply %q: %v", a.file, line, err)
		}
		if e.Error != "" {
			t.Fatalf("%s: %s", a.file, e.Error)
		}
		if rep != nil {
			if err := json.Unmarshal(line, rep); err != nil {
				t.Fatalf("%s: reply %q: %v", a.file, line, err)
			}
		}
	case <-time.After(agentTimeout):
		t.Fatalf("%s: no reply within %v; stderr:\n%s", a.file, agentTimeout, a.stderr)
	}
}
