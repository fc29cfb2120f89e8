package backendtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pgcache/pgcache/backends"
)

// Replies rendered in RESP, as the RESP front writes them: a collection
// command's reply is compared as the bytes a client would read.

// errorReply is err as the RESP front answers it: a Refusal and
// ErrWrongType in Redis's words; any other error is the store's failure,
// which no reference answers.
func errorReply(err error) []byte {
	var r backends.Refusal
	switch {
	case errors.As(err, &r):
		return []byte("-" + string(r) + "\r\n")
	case errors.Is(err, backends.ErrWrongType):
		return []byte("-" + backends.ErrWrongType.Error() + "\r\n")
	}
	return []byte("-ERR store failed: " + strings.ReplaceAll(err.Error(), "\r\n", " ") + "\r\n")
}

// node is a parsed RESP reply: its header line (with a bulk's body after
// "\r\n"), and its elements for an aggregate (a map's keys and values
// alternate).
type node struct {
	line  string
	elems []node
}

func parseReply(b []byte) (node, error) {
	br := bufio.NewReader(bytes.NewReader(b))
	n, err := readNode(br)
	if err == nil && br.Buffered() > 0 {
		err = fmt.Errorf("%d bytes after the reply", br.Buffered())
	}
	return n, err
}

func readNode(br *bufio.Reader) (node, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return node{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return node{}, errors.New("an empty line")
	}
	n := node{line: line}
	count, _ := strconv.Atoi(line[1:])
	switch line[0] {
	case '$', '=', '!':
		if count >= 0 {
			body := make([]byte, count+2)
			if _, err := io.ReadFull(br, body); err != nil {
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
	n.write(&b)
	return b.String()
}

func (n node) write(b *strings.Builder) {
	b.WriteString(n.line)
	b.WriteString("\r\n")
	for _, e := range n.elems {
		e.write(b)
	}
}

func (n node) isError() bool { return n.line[0] == '-' }

// null reports whether n is a null: RESP2's nil bulk or array, RESP3's.
func (n node) null() bool { return n.line == "$-1" || n.line == "*-1" || n.line == "_" }

// aggregate reports whether n has elements (an array, set or map).
func (n node) aggregate() bool {
	switch n.line[0] {
	case '*', '~', '%', '>', '|':
		return !strings.HasPrefix(n.line, "*-")
	}
	return false
}

// shape is n without its scalars' contents: the kinds and sizes of its
// aggregates, the kinds of its scalars.
func (n node) shape() string {
	var b strings.Builder
	var walk func(n node)
	walk = func(n node) {
		if n.aggregate() || n.null() {
			b.WriteString(n.line)
		} else {
			b.WriteByte(n.line[0])
		}
		b.WriteByte(' ')
		for _, e := range n.elems {
			walk(e)
		}
	}
	walk(n)
	return b.String()
}

// leaves are n's scalars in order, nulls left out, each as its text: a bulk's body, a
// double's or an integer's digits (so RESP2's bulk score and RESP3's
// double read the same).
func (n node) leaves() []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		switch {
		case n.null():
			return
		case n.aggregate():
			for _, e := range n.elems {
				walk(e)
			}
			return
		}
		_, body, ok := strings.Cut(n.line, "\r\n")
		if !ok {
			body = n.line[1:]
		}
		out = append(out, body)
	}
	walk(n)
	return out
}

// chunks are n's leaves in groups of width (a field and its value), each
// group as one string.
func (n node) chunks(width int) []string {
	l := n.leaves()
	out := make([]string, 0, len(l)/width)
	for i := 0; i+width <= len(l); i += width {
		out = append(out, strings.Join(l[i:i+width], "\x00"))
	}
	return out
}

// short cuts a long reply or command for a failure's message.
func short(s string) string {
	if len(s) > 600 {
		return s[:600] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}
