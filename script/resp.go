package script

import (
	"bytes"
	"errors"
	"strconv"
)

// ErrIncomplete is ParseReply's answer to bytes that end before the reply does.
var ErrIncomplete = errors.New("script: incomplete reply")

// errProtocol is ParseReply's answer to bytes that are not RESP.
var errProtocol = errors.New("script: malformed reply")

// maxDepth bounds the nesting ParseReply follows, so a hostile reply cannot
// exhaust the goroutine stack.
const maxDepth = 512

// ParseReply parses one RESP2 or RESP3 reply at the start of b and returns
// it with the number of bytes it took. The value's strings share b's
// memory (a Caller's reply is converted to Lua before the next one is
// parsed: see Caller); copy them to keep them past b's reuse. RESP3
// attributes ("|") are skipped, as Redis skips them when it hands a reply
// to Lua; pushes (">") parse as arrays.
func ParseReply(b []byte) (Value, int, error) {
	return parseValue(b, 0)
}

func parseValue(b []byte, depth int) (Value, int, error) {
	if depth > maxDepth {
		return Value{}, 0, errProtocol
	}
	line, n, err := readLine(b)
	if err != nil {
		return Value{}, 0, err
	}
	if len(line) == 0 {
		return Value{}, 0, errProtocol
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Value{Kind: KindStatus, Str: body}, n, nil
	case '-':
		return Value{Kind: KindError, Str: body}, n, nil
	case ':':
		i, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return Value{}, 0, errProtocol
		}
		return Int(i), n, nil
	case '_':
		return Null(), n, nil
	case '#':
		switch string(body) {
		case "t":
			return Bool(true), n, nil
		case "f":
			return Bool(false), n, nil
		}
		return Value{}, 0, errProtocol
	case ',':
		f, err := parseDouble(body)
		if err != nil {
			return Value{}, 0, errProtocol
		}
		return Double(f), n, nil
	case '(':
		return Value{Kind: KindBigNum, Str: body}, n, nil
	case '$', '=', '!':
		size, err := strconv.Atoi(string(body))
		if err != nil || size < -1 {
			return Value{}, 0, errProtocol
		}
		if size == -1 {
			return Null(), n, nil
		}
		if len(b) < n+size+2 {
			return Value{}, 0, ErrIncomplete
		}
		if b[n+size] != '\r' || b[n+size+1] != '\n' {
			return Value{}, 0, errProtocol
		}
		data := b[n : n+size : n+size]
		total := n + size + 2
		switch line[0] {
		case '=':
			if len(data) < 4 || data[3] != ':' {
				return Value{}, 0, errProtocol
			}
			return Value{Kind: KindVerbatim, Format: string(data[:3]), Str: data[4:]}, total, nil
		case '!':
			return Value{Kind: KindError, Str: data}, total, nil
		}
		return Bulk(data), total, nil
	case '*', '%', '~', '>', '|':
		count, err := strconv.Atoi(string(body))
		if err != nil || count < -1 {
			return Value{}, 0, errProtocol
		}
		if count == -1 {
			return Null(), n, nil
		}
		items := count
		if line[0] == '%' || line[0] == '|' {
			items *= 2
		}
		// Each element takes at least 3 bytes ("_\r\n"): refuse counts
		// the input cannot hold before allocating for them.
		if items > (len(b)-n)/3+1 {
			return Value{}, 0, ErrIncomplete
		}
		elems := make([]Value, 0, items)
		for range items {
			v, m, err := parseValue(b[n:], depth+1)
			if err != nil {
				return Value{}, 0, err
			}
			elems = append(elems, v)
			n += m
		}
		switch line[0] {
		case '%':
			return Value{Kind: KindMap, Elems: elems}, n, nil
		case '~':
			return Value{Kind: KindSet, Elems: elems}, n, nil
		case '|':
			v, m, err := parseValue(b[n:], depth+1)
			if err != nil {
				return Value{}, 0, err
			}
			return v, n + m, nil
		}
		return Value{Kind: KindArray, Elems: elems}, n, nil
	}
	return Value{}, 0, errProtocol
}

func readLine(b []byte) ([]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, 0, ErrIncomplete
	}
	if i == 0 || b[i-1] != '\r' {
		return nil, 0, errProtocol
	}
	return b[:i-1], i + 1, nil
}

func parseDouble(b []byte) (float64, error) {
	switch string(b) {
	case "inf", "+inf":
		return strconv.ParseFloat("+Inf", 64)
	case "-inf":
		return strconv.ParseFloat("-Inf", 64)
	case "nan":
		return strconv.ParseFloat("NaN", 64)
	}
	return strconv.ParseFloat(string(b), 64)
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// AppendReply writes v to dst in RESP2 (proto 2) or RESP3 (proto 3), the
// way Redis downgrades RESP3 types for a RESP2 client: a map becomes an
// array of pairs, a set an array, a double a bulk string, a bool 1 or 0, a
// verbatim string a bulk string, a big number a bulk string. Status and
// error lines have CR and LF replaced by spaces, as Redis does, so a reply
// cannot break the stream.
func AppendReply(dst []byte, v Value, proto int) []byte {
	switch v.Kind {
	case KindNull:
		if proto == 3 {
			return append(dst, "_\r\n"...)
		}
		return append(dst, "$-1\r\n"...)
	case KindStatus:
		dst = append(dst, '+')
		dst = appendLine(dst, v.Str)
		return append(dst, '\r', '\n')
	case KindError:
		dst = append(dst, '-')
		dst = appendLine(dst, v.Str)
		return append(dst, '\r', '\n')
	case KindInt:
		return appendHeader(dst, ':', v.Int)
	case KindBulk:
		return appendBulk(dst, v.Str)
	case KindArray:
		dst = appendHeader(dst, '*', int64(len(v.Elems)))
		for _, e := range v.Elems {
			dst = AppendReply(dst, e, proto)
		}
		return dst
	case KindMap:
		if proto == 3 {
			dst = appendHeader(dst, '%', int64(len(v.Elems)/2))
		} else {
			dst = appendHeader(dst, '*', int64(len(v.Elems)))
		}
		for _, e := range v.Elems {
			dst = AppendReply(dst, e, proto)
		}
		return dst
	case KindSet:
		if proto == 3 {
			dst = appendHeader(dst, '~', int64(len(v.Elems)))
		} else {
			dst = appendHeader(dst, '*', int64(len(v.Elems)))
		}
		for _, e := range v.Elems {
			dst = AppendReply(dst, e, proto)
		}
		return dst
	case KindDouble:
		if proto == 3 {
			dst = append(dst, ',')
			dst = formatDouble(dst, v.Float)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, formatDouble(nil, v.Float))
	case KindBool:
		if proto == 3 {
			if v.Int != 0 {
				return append(dst, "#t\r\n"...)
			}
			return append(dst, "#f\r\n"...)
		}
		return appendHeader(dst, ':', v.Int)
	case KindVerbatim:
		if proto == 3 {
			format := v.Format
			if len(format) != 3 {
				format = "txt"
			}
			dst = appendHeader(dst, '=', int64(len(v.Str)+4))
			dst = append(dst, format...)
			dst = append(dst, ':')
			dst = append(dst, v.Str...)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, v.Str)
	case KindBigNum:
		if proto == 3 {
			dst = append(dst, '(')
			dst = appendLine(dst, v.Str)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, v.Str)
	}
	return append(dst, "$-1\r\n"...)
}

func appendHeader(dst []byte, typ byte, n int64) []byte {
	dst = append(dst, typ)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

func appendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// appendLine appends s with CR and LF turned into spaces.
func appendLine(dst, s []byte) []byte {
	for _, c := range s {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}
