package coll

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Differential helpers of the hash and set tests, for replies whose order
// (or content) Redis does not fix: a hash or set Redis keeps in a hash
// table answers in its table's order, a random pick is random.

// RESP3 tells the Ops that the test writer speaks RESP3 (see resp3).

// node is a parsed RESP reply: its header line, and its elements for an
// aggregate (a map's keys and values alternate).
type node struct {
	line  string // "*3", "$5\r\nhello" for a bulk (with its body), ":1"…
	elems []node
}

func parseNode(b []byte) node {
	br := bufio.NewReader(bytes.NewReader(b))
	n, err := readNode(br)
	if err != nil {
		panic(fmt.Sprintf("bad reply %q: %v", b, err))
	}
	return n
}

func readNode(br *bufio.Reader) (node, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return node{}, err
	}
	line = strings.TrimRight(line, "\r\n")
	n := node{line: line}
	count, _ := strconv.Atoi(line[1:])
	switch line[0] {
	case '$', '=', '!':
		if count >= 0 {
			body := make([]byte, count+2)
			if _, err := io_ReadFull(br, body); err != nil {
				return n, err
			}
			n.line += "\r\n" + string(body[:count])
		}
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			count *= 2
		}
		for range max(count, 0) {
			e, err := readNode(br)
			if err != nil {
				return n, err
			}
			n.elems = append(n.elems, e)
		}
	}
	return n, nil
}

func (n node) String() string {
	var b strings.Builder
	b.WriteString(n.line)
	b.WriteString("\r\n")
	for _, e := range n.elems {
		b.WriteString(e.String())
	}
	return b.String()
}

// canon puts a reply in a form that does not depend on what Redis leaves
// open: "sorted" sorts a reply's elements, "pairs" sorts its elements two
// by two (HGETALL of a hash table), "count" keeps only its type and size
// (a random pick).
func canon(mode string, b []byte) string {
	n := parseNode(b)
	if n.line[0] == '-' || len(n.elems) == 0 && mode != "count" {
		return n.String()
	}
	switch mode {
	case "sorted":
		slices.SortFunc(n.elems, func(a, b node) int { return strings.Compare(a.String(), b.String()) })
	case "pairs":
		if n.elems[0].line[0] == '*' { // RESP3's pairs, arrays of two
			return canon("sorted", b)
		}
		var ps []string
		for i := 0; i+1 < len(n.elems); i += 2 {
			ps = append(ps, n.elems[i].String()+n.elems[i+1].String())
		}
		slices.Sort(ps)
		return n.line + "\r\n" + strings.Join(ps, "")
	case "count":
		if n.line[0] == '$' {
			return "$"
		}
		return n.line
	default:
		panic("no canon mode " + mode)
	}
	return n.String()
}

// sameAs is same with a mode per line: a line "[sorted] SMEMBERS s"
// compares its replies through canon("sorted", …); other lines compare
// bytes.
func sameAs(t *testing.T, script ...string) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		for _, line := range script {
			mode := ""
			if strings.HasPrefix(line, "[") {
				end := strings.IndexByte(line, ']')
				mode, line = line[1:end], strings.TrimSpace(line[end+1:])
			}
			args := Args(line)
			want, got := rc.do(t, args), d.do(proto, args)
			if mode != "" {
				want, got = []byte(canon(mode, want)), []byte(canon(mode, got))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q", proto, short(line), short(string(got)), short(string(want)))
			}
		}
	}
}

// short cuts a long text for a message.
func short(s string) string {
	if len(s) > 600 {
		return fmt.Sprintf("%s…(%d bytes)", s[:600], len(s))
	}
	return s
}

// sameScan runs setup on both sides, then a whole scan (cmd's cursor is
// the word CURSOR) on each, and compares what the scans returned as sets:
// each side's scan must end, and return every member once at least.
func sameScan(t *testing.T, setup []string, cmd string, pairs bool) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		for _, line := range setup {
			args := Args(line)
			if w, g := rc.do(t, args), d.do(proto, args); !bytes.Equal(g, w) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q", proto, line, g, w)
			}
		}
		scan := func(do func([][]byte) []byte) []string {
			seen := map[string]bool{}
			cursor := "0"
			for range 100000 {
				n := parseNode(do(Args(strings.Replace(cmd, "CURSOR", cursor, 1))))
				if n.line[0] == '-' {
					return []string{n.line}
				}
				cursor = strings.SplitN(n.elems[0].line, "\r\n", 2)[1]
				es := n.elems[1].elems
				step := 1
				if pairs {
					step = 2
				}
				for i := 0; i < len(es); i += step {
					k := es[i].line
					if pairs {
						k += " " + es[i+1].line
					}
					seen[k] = true
				}
				if cursor == "0" {
					out := make([]string, 0, len(seen))
					for k := range seen {
						out = append(out, k)
					}
					slices.Sort(out)
					return out
				}
			}
			t.Fatalf("RESP%d %s: the scan does not end", proto, cmd)
			return nil
		}
		want := scan(func(a [][]byte) []byte { return rc.do(t, a) })
		got := scan(func(a [][]byte) []byte { return d.do(proto, a) })
		if !slices.Equal(got, want) {
			t.Fatalf("RESP%d %s:\n got %d %q\nwant %d %q", proto, cmd, len(got), got, len(want), want)
		}
	}
}

// fill is a command that adds n members (or fields, with a value each)
// named prefix0, prefix1…: "SADD s" "m" 3 is SADD s m0 m1 m2.
func fill(cmd, prefix string, n int, values bool) string {
	var b strings.Builder
	b.WriteString(cmd)
	for i := range n {
		fmt.Fprintf(&b, " %s%d", prefix, i)
		if values {
			fmt.Fprintf(&b, " v%d", i)
		}
	}
	return b.String()
}
