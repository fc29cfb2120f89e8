package proxy

import (
	"strings"
	"testing"
)

// Each container command has HELP, its lines in help.txt, and help.txt
// has no section for a command without subcommands.
func TestHelpSections(t *testing.T) {
	withHelp := map[string]bool{}
	for _, cmd := range commandList {
		if cmd.subs == nil {
			continue
		}
		withHelp[strings.ToUpper(cmd.name)] = true
		if _, ok := cmd.subs["help"]; !ok {
			t.Errorf("%s has no HELP", cmd.name)
		}
		if len(helps[strings.ToUpper(cmd.name)]) == 0 {
			t.Errorf("%s HELP has no lines in help.txt", cmd.name)
		}
	}
	for name := range helps {
		if !withHelp[name] {
			t.Errorf("help.txt has a section for %s, which has no subcommands", name)
		}
	}
	if len(withHelp) < 6 {
		t.Errorf("%d commands with HELP; CLIENT, COMMAND, CONFIG, MEMORY, OBJECT and PUBSUB at least", len(withHelp))
	}
}

func TestHelpReply(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	want := "*5\r\n+MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n" +
		"+USAGE <key> [SAMPLES <count>]\r\n+    Return memory in bytes used by <key> and its value.\r\n" +
		"+HELP\r\n+    Prints this help.\r\n"
	for _, name := range []string{"MEMORY", "memory", "Memory"} {
		if got := c.do(name, "help"); got != want {
			t.Errorf("%s HELP:\n got %q\nwant %q", name, got, want)
		}
	}
	if got := c.do("CLIENT", "HELP"); !strings.HasPrefix(got, "*") || !strings.Contains(got, "+TRACKING (ON|OFF) [REDIRECT <id>]") {
		t.Errorf("CLIENT HELP: %q", got)
	}
}

func TestParseHelpRefusesLinesBeforeASection(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a line before the first section was accepted")
		}
	}()
	parseHelp("# comment\nstray\n== X\nline\n")
}
