package load

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
)

// The few RESP2/RESP3 shapes the bench sends and reads: GET and SET
// commands out, status, error, integer, bulk, null and array replies in.

// appendGet appends `GET key` as a RESP array of bulk strings.
func appendGet(buf []byte, key string) []byte {
	buf = append(buf, "*2\r\n$3\r\nGET\r\n"...)
	return appendBulk(buf, key)
}

// appendSet appends `SET key value`.
func appendSet(buf []byte, key string, val []byte) []byte {
	buf = append(buf, "*3\r\n$3\r\nSET\r\n"...)
	buf = appendBulk(buf, key)
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(val)), 10)
	buf = append(buf, "\r\n"...)
	buf = append(buf, val...)
	return append(buf, "\r\n"...)
}

func appendBulk(buf []byte, s string) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, "\r\n"...)
	buf = append(buf, s...)
	return append(buf, "\r\n"...)
}

// replyKind is the shape of a reply.
type replyKind uint8

const (
	replyStatus replyKind = iota // +OK
	replyError                   // -ERR …
	replyInt                     // :1
	replyBulk                    // $3 abc
	replyNil                     // $-1, *-1, or RESP3 _
	replyArray                   // *2 …
)

// Status-code keys of RESP results in Metrics.StatusCodes.
func (k replyKind) code() string {
	switch k {
	case replyStatus:
		return "status"
	case replyError:
		return "error"
	case replyInt:
		return "integer"
	case replyBulk:
		return "bulk"
	case replyNil:
		return "nil"
	}
	return "array"
}

// Bounds on what a reply may claim, so a broken stream fails fast
// instead of allocating or skipping without end.
const (
	maxReplyBulk  = 512 << 20 // Redis's proto-max-bulk-len
	maxReplyDepth = 8
)

var errBadReply = errors.New("malformed RESP reply")

// reply is one read reply: its kind, the text of a status or error, and
// the bytes it took.
type reply struct {
	kind replyKind
	text string // status and error replies
	size int    // bytes read off the wire
}

// readReply reads one reply, skipping bulk payloads (the bench checks
// values separately, over HTTP).
func readReply(br *bufio.Reader) (reply, error) {
	return readReplyDepth(br, 0)
}

func readReplyDepth(br *bufio.Reader, depth int) (reply, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return reply{}, err
	}
	r := reply{size: len(line)}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return r, fmt.Errorf("%w: %q", errBadReply, line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		r.kind, r.text = replyStatus, string(body)
	case '-':
		r.kind, r.text = replyError, string(body)
	case ':':
		r.kind = replyInt
	case '_':
		r.kind = replyNil
	case '$':
		n, err := strconv.Atoi(string(body))
		switch {
		case err != nil || n > maxReplyBulk || n < -1:
			return r, fmt.Errorf("%w: bulk length %q", errBadReply, body)
		case n == -1:
			r.kind = replyNil
			return r, nil
		}
		if _, err := br.Discard(n + 2); err != nil {
			return r, err
		}
		r.kind, r.size = replyBulk, r.size+n+2
	case '*':
		n, err := strconv.Atoi(string(body))
		switch {
		case err != nil || n < -1 || depth >= maxReplyDepth:
			return r, fmt.Errorf("%w: array %q", errBadReply, body)
		case n == -1:
			r.kind = replyNil
			return r, nil
		}
		r.kind = replyArray
		for range n {
			e, err := readReplyDepth(br, depth+1)
			r.size += e.size
			if err != nil {
				return r, err
			}
		}
	default:
		return r, fmt.Errorf("%w: type %q", errBadReply, line[0])
	}
	return r, nil
}
