package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pgcache/pgcache/conf"
)

var testLimits = limits{
	maxBulk:   conf.DefaultMaxBulkBytes,
	maxInline: conf.DefaultMaxInlineBytes,
	maxMulti:  conf.DefaultMaxMultibulkLen,
	maxQuery:  conf.DefaultMaxQueryBytes,
}

// parseAll feeds src to a reader as the connection loop does and returns
// the requests it parsed, each as its arguments joined by "|", and the
// protocol error that ended it (nil when src ran out first).
func parseAll(t testing.TB, src io.Reader, l limits) ([]string, error) {
	t.Helper()
	rd := newReader(l)
	var got []string
	for {
		for {
			args, err := rd.next()
			if err != nil {
				return got, err
			}
			if args == nil {
				break
			}
			got = append(got, string(bytes.Join(args, []byte("|"))))
		}
		rd.shrink()
		if _, err := rd.fill(src); err != nil {
			return got, nil
		}
	}
}

func TestReader(t *testing.T) {
	small := testLimits
	small.maxInline, small.maxBulk, small.maxMulti, small.maxQuery = 16, 8, 3, 40
	for _, tc := range []struct {
		name   string
		in     string
		limits *limits
		want   []string
		err    error // nil: the input ran out
	}{
		{name: "multibulk", in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", want: []string{"GET|k"}},
		{name: "pipeline", in: "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\nPING\r\n", want: []string{"PING", "ECHO|", "PING"}},
		{name: "binary bulk", in: "*1\r\n$4\r\n\r\n\x00\xff\r\n", want: []string{"\r\n\x00\xff"}},
		{name: "incomplete bulk", in: "*2\r\n$3\r\nGET\r\n$5\r\nab", want: nil},
		{name: "incomplete count", in: "*2", want: nil},
		{name: "count line needs the byte after CR", in: "*1\r", want: nil},
		{name: "empty and negative counts", in: "*0\r\n*-1\r\n*-100\r\nPING\r\n", want: []string{"PING"}},
		{name: "inline", in: "SET a b\r\nGET a\n", want: []string{"SET|a|b", "GET|a"}},
		{name: "inline quotes", in: `SET "a b" 'c d' "\x41\n" 'it\'s'` + "\r\n", want: []string{"SET|a b|c d|A\n|it's"}},
		{name: "inline blank lines", in: "\r\n\n   \t\r\nPING\r\n", want: []string{"PING"}},
		{name: "inline without newline", in: "PING", want: nil},
		{name: "inline empty quotes", in: `ECHO ""` + "\r\n", want: []string{"ECHO|"}},
		{name: "overflowing bulk length", in: "*1\r\n$9223372036854775807\r\nx\r\n", err: errInvalidBulkLen},
		{name: "bulk length past int64", in: "*1\r\n$9223372036854775808\r\n", err: errInvalidBulkLen},
		{name: "negative bulk length", in: "*1\r\n$-1\r\n", err: errInvalidBulkLen},
		{name: "bulk over the limit", in: "*1\r\n$9\r\n", limits: &small, err: errInvalidBulkLen},
		{name: "bulk at the limit", in: "*1\r\n$8\r\n12345678\r\n", limits: &small, want: []string{"12345678"}},
		{name: "count over the limit", in: "*4\r\n", limits: &small, err: errInvalidMultibulkLen},
		{name: "count past int64", in: "*99999999999999999999\r\n", err: errInvalidMultibulkLen},
		{name: "count not a number", in: "*x\r\n", err: errInvalidMultibulkLen},
		{name: "expected dollar", in: "*1\r\nx3\r\n", err: errExpectedDollar('x')},
		{name: "too big inline", in: strings.Repeat("a", 17), limits: &small, err: errTooBigInline},
		{name: "inline at the limit", in: strings.Repeat("a", 16) + "\n", limits: &small, want: []string{strings.Repeat("a", 16)}},
		{name: "inline past the limit with newline", in: strings.Repeat("a", 17) + "\n", limits: &small, err: errTooBigInline},
		{name: "too big count line", in: "*" + strings.Repeat("1", 17), limits: &small, err: errTooBigMbulkCount},
		{name: "too big bulk line", in: "*1\r\n$" + strings.Repeat("1", 17), limits: &small, err: errTooBigBulkCount},
		{name: "unbalanced quotes", in: "SET \"a\r\n", err: errUnbalancedQuotes},
		{name: "request over the query limit", in: "*3\r\n$8\r\n12345678\r\n$8\r\n12345678\r\n$8\r\n", limits: &small, err: errQueryLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLimits
			if tc.limits != nil {
				l = *tc.limits
			}
			for _, feed := range []struct {
				name string
				src  io.Reader
			}{
				{"whole", strings.NewReader(tc.in)},
				{"byte at a time", iotest.OneByteReader(strings.NewReader(tc.in))},
			} {
				got, err := parseAll(t, feed.src, l)
				if fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(err) != fmt.Sprint(tc.err) {
					t.Errorf("%s: got %q, %v; want %q, %v", feed.name, got, err, tc.want, tc.err)
				}
			}
		})
	}
}

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{"  a  b\t c ", []string{"a", "b", "c"}},
		{`"a b"`, []string{"a b"}},
		{`"\x41\x4g\x"`, []string{"Ax4gx"}},
		{`"\n\r\t\b\a\\\"\q"`, []string{"\n\r\t\b\a\\\"q"}},
		{`'a\'b' 'c\d'`, []string{"a'b", `c\d`}},
		{`a"b c"d`, nil},
		{`a"b c" d`, []string{"ab c", "d"}},
		{`"a"b`, nil},
		{`'a'b`, nil},
		{`"a`, nil},
		{`'a`, nil},
		{"\"a\"\vb", []string{"a", "b"}},
		{"a\vb", []string{"a\vb"}},
		{"a\x00b c", []string{"a"}},
		{`"a\`, nil},
		{`""`, []string{""}},
	} {
		line := []byte(tc.line)
		args, ok := splitArgs(line, nil)
		var got []string
		if ok {
			got = []string{}
			for _, a := range args {
				got = append(got, string(a))
			}
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestReaderLargeBulk reads a value much larger than the buffer: the buffer
// ends near the value's size rather than a power of two past it.
func TestReaderLargeBulk(t *testing.T) {
	val := bytes.Repeat([]byte("v"), 3<<20+123)
	in := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(val), val)
	rd := newReader(testLimits)
	src := strings.NewReader(in)
	var args [][]byte
	for args == nil {
		if _, err := rd.fill(src); err != nil {
			t.Fatalf("fill: %v", err)
		}
		var err error
		if args, err = rd.next(); err != nil {
			t.Fatalf("next: %v", err)
		}
	}
	if len(args) != 3 || !bytes.Equal(args[2], val) {
		t.Fatalf("got %d args, value of %d bytes", len(args), len(args[len(args)-1]))
	}
	if c := cap(rd.buf); c > len(in)+2*minRead {
		t.Errorf("buffer grew to %d bytes for a %d-byte request", c, len(in))
	}
	rd.shrink()
	if cap(rd.buf) != readBufSize {
		t.Errorf("buffer of %d bytes after shrink, want %d", cap(rd.buf), readBufSize)
	}
}

// TestReaderAnnouncedBulkCostsNothing: announcing a large value without
// sending it does not make the reader allocate it.
func TestReaderAnnouncedBulkCostsNothing(t *testing.T) {
	rd := newReader(testLimits)
	src := strings.NewReader("*1\r\n$500000000\r\n" + strings.Repeat("x", 100))
	for {
		if _, err := rd.fill(src); err != nil {
			break
		}
		if args, err := rd.next(); args != nil || err != nil {
			t.Fatalf("next = %q, %v", args, err)
		}
	}
	if cap(rd.buf) > readBufSize {
		t.Errorf("buffer grew to %d bytes for 100 bytes of data", cap(rd.buf))
	}
}

func TestReaderAllocs(t *testing.T) {
	in := []byte("*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nGET \"key\"\r\n")
	rd := newReader(testLimits)
	allocs := testing.AllocsPerRun(1000, func() {
		rd.r, rd.w = 0, copy(rd.buf, in)
		for {
			args, err := rd.next()
			if err != nil {
				t.Fatal(err)
			}
			if args == nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Errorf("parsing allocates %v times per batch, want 0", allocs)
	}
}

// FuzzReader checks the parser never panics, never exceeds its limits,
// and parses the same requests (and fails the same way) however the input
// is split into reads.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*1\r\n$9223372036854775807\r\nx\r\n",
		"*-1\r\n*0\r\nPING\r\n",
		"SET \"a\\x41\" 'b\\'c'\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n",
		"*1\rX$4\rYPING\r\n",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		l := limits{maxBulk: 64, maxInline: 32, maxMulti: 8, maxQuery: 256}
		whole, errWhole := parseAll(t, bytes.NewReader(in), l)
		n := int(chunk%16) + 1
		split, errSplit := parseAll(t, &chunkReader{data: in, n: n}, l)
		if fmt.Sprintf("%q %v", whole, errWhole) != fmt.Sprintf("%q %v", split, errSplit) {
			t.Fatalf("whole: %q %v\nin %d-byte reads: %q %v", whole, errWhole, n, split, errSplit)
		}
		var pe *protoError
		if errWhole != nil && !errors.As(errWhole, &pe) {
			t.Fatalf("error %v is not a protocol error", errWhole)
		}
		for _, r := range whole {
			if len(r) > int(l.maxQuery)+int(l.maxMulti) {
				t.Fatalf("request of %d bytes passed the query limit", len(r))
			}
		}
	})
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}
