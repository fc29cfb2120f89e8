package coll

import (
	"bytes"
	"strconv"
	"strings"
)

// RESPBuffer is a Writer that renders a reply in RESP2 or RESP3 into a
// buffer, byte for byte as the RESP front writes it to a client: for
// comparing replies as bytes without a connection (the conformance suite
// against Redis, the tests of each store).
type RESPBuffer struct {
	Proto int // 2 or 3
	bytes.Buffer
}

func (w *RESPBuffer) RESP3() bool     { return w.Proto == 3 }
func (w *RESPBuffer) Int(n int64)     { w.header(':', int64(n)) }
func (w *RESPBuffer) Status(s string) { w.line('+', s) }
func (w *RESPBuffer) Error(s string)  { w.line('-', s) }
func (w *RESPBuffer) Array(n int)     { w.header('*', int64(n)) }

func (w *RESPBuffer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.Write(b)
	w.WriteString("\r\n")
}

func (w *RESPBuffer) Null() { w.null("$-1\r\n") }

func (w *RESPBuffer) NullArray() { w.null("*-1\r\n") }

// Map is RESP3's map, or RESP2's flat array of keys and values.
func (w *RESPBuffer) Map(n int) {
	if w.RESP3() {
		w.header('%', int64(n))
		return
	}
	w.header('*', 2*int64(n))
}

// Set is RESP3's set, or RESP2's array.
func (w *RESPBuffer) Set(n int) {
	if w.RESP3() {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// Double is a score as Redis 7.0 writes one: RESP3's double, RESP2's bulk
// (FormatScore both).
func (w *RESPBuffer) Double(f float64) {
	if w.RESP3() {
		w.line(',', FormatScore(f))
		return
	}
	w.Bulk([]byte(FormatScore(f)))
}

// Bool is RESP3's boolean, or RESP2's integer 1 or 0.
func (w *RESPBuffer) Bool(b bool) {
	switch {
	case !w.RESP3() && b:
		w.Int(1)
	case !w.RESP3():
		w.Int(0)
	case b:
		w.WriteString("#t\r\n")
	default:
		w.WriteString("#f\r\n")
	}
}

// null is RESP3's null, or RESP2's resp2 (a nil bulk or array).
func (w *RESPBuffer) null(resp2 string) {
	if w.RESP3() {
		w.WriteString("_\r\n")
		return
	}
	w.WriteString(resp2)
}

func (w *RESPBuffer) header(kind byte, n int64) {
	w.WriteByte(kind)
	w.WriteString(strconv.FormatInt(n, 10))
	w.WriteString("\r\n")
}

func (w *RESPBuffer) line(kind byte, s string) {
	w.WriteByte(kind)
	w.WriteString(s)
	w.WriteString("\r\n")
}

var _ Writer = (*RESPBuffer)(nil)

// Args splits a command written on one line into its arguments: words
// separated by spaces, or a 'quoted string' for an argument with spaces
// (or an empty one). For scripts of commands: the conformance suite and
// the stores' tests.
func Args(line string) [][]byte {
	var args [][]byte
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '\'' {
			end := strings.IndexByte(line[1:], '\'')
			args = append(args, []byte(line[1:1+end]))
			line = line[2+end:]
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		args = append(args, []byte(word))
		line = rest
	}
	return args
}
