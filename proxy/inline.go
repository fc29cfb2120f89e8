package proxy

import "bytes"

// inline parses the inline request at r: one line of arguments, as typed
// into telnet. It returns the arguments; nil for a blank line (consumed);
// wait when the line has not fully arrived.
//
// A line is bounded by maxInline whether or not its end has arrived, so
// the result does not depend on how the client's writes were split.
func (rd *reader) inline() (args [][]byte, wait bool, err error) {
	window := rd.buf[rd.r:min(rd.w, rd.r+rd.maxInline+1)]
	i := bytes.IndexByte(window, '\n')
	// Redis finds the end of the line with strchr, which stops at a NUL:
	// a NUL before the newline hides it, and Redis waits for more until
	// the request is too big (64KiB). Taking the line would run what
	// follows the NUL; waiting holds a connection that can only end in an
	// error. pgcache answers the error as soon as the NUL arrives.
	if z := bytes.IndexByte(window, 0); z >= 0 && (i < 0 || z < i) {
		return nil, false, errInlineNUL
	}
	if i < 0 {
		if rd.w-rd.r > rd.maxInline {
			return nil, false, errTooBigInline
		}
		return nil, true, nil
	}
	line := rd.buf[rd.r : rd.r+i]
	rd.r += i + 1
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	args, ok := splitArgs(line, rd.args[:0])
	if !ok {
		return nil, false, errUnbalancedQuotes
	}
	rd.args = args
	if len(args) == 0 {
		return nil, false, nil
	}
	return args, false, nil
}

// splitArgs splits line into arguments as Redis's sdssplitargs does,
// appending them to args. ok is false for unbalanced quotes.
//
// The rules, quirks included: blanks (C's isspace) separate arguments, but
// only space, tab, CR, LF and NUL end an unquoted one; "double quotes" take
// \xHH and \n \r \t \b \a escapes (any other escaped byte stands for
// itself); 'single quotes' take only \'; a closing quote must be followed by
// a blank or the end of the line; a quote may open in the middle of an
// argument (a"b c" is "ab c"); and a NUL byte ends the line, since Redis
// reads it as a C string.
//
// The unescaped arguments are written over the line itself (an argument is
// never longer than its quoted form), so nothing is allocated.
func splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	n := len(line)
	at := func(i int) byte { // the C string's view: NUL past the end
		if i < n {
			return line[i]
		}
		return 0
	}
	p := 0
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p == n {
			return args, true
		}
		start, o := p, p // o is where the next unescaped byte goes; o < p once a quote opened
		var quote byte   // the open quote, '"' or '\''; 0 outside quotes
		for done := false; !done; {
			c := at(p)
			switch {
			case quote == 0:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"', '\'':
					quote = c
				default:
					line[o] = c
					o++
				}
			case c == 0:
				return args, false // the line ends inside the quotes
			case c == quote:
				if next := at(p + 1); next != 0 && !isSpace(next) {
					return args, false
				}
				done = true
			case quote == '"' && c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
				line[o] = unhex(at(p+2))<<4 | unhex(at(p+3))
				o++
				p += 3
			case quote == '"' && c == '\\' && at(p+1) != 0:
				p++
				line[o] = unescape(line[p])
				o++
			case quote == '\'' && c == '\\' && at(p+1) == '\'':
				p++
				line[o] = '\''
				o++
			default:
				line[o] = c
				o++
			}
			if p < n {
				p++
			}
		}
		args = append(args, line[start:o:o])
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
