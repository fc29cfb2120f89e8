package proxy

import (
	_ "embed"
	"strings"
)

//go:embed help.txt
var helpText string

// helps holds each container command's HELP lines, by its name in capitals.
var helps = parseHelp(helpText)

// parseHelp reads help.txt: "== NAME" starts a command's lines; blank
// lines and those starting with "#" are skipped.
func parseHelp(text string) map[string][]string {
	m := make(map[string][]string)
	var name string
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "== "):
			name = line[len("== "):]
			m[name] = []string{}
		case name != "":
			m[name] = append(m[name], line)
		default:
			panic("proxy: help.txt: a line before the first command: " + line)
		}
	}
	return m
}

// cmdHelp is the HELP subcommand of CLIENT, CONFIG and the other container
// commands, Redis's addReplyHelp: a header, the command's lines, and HELP.
func cmdHelp(c *conn, args [][]byte) {
	container := strings.ToUpper(string(args[0]))
	lines := helps[container]
	c.writeArray(len(lines) + 3)
	c.writeSimple(container + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.writeSimple(l)
	}
	c.writeSimple("HELP")
	c.writeSimple("    Prints this help.")
}
