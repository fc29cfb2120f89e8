package valkey

import (
	"errors"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// A request passed on (Store.Do) is answered with the server's reply as it
// came: a status stays a status (+OK, not $2 OK), a RESP3 set stays a set
// (~), a map keeps its order. valkey-go parses replies into ValkeyMessage,
// whose exported methods cannot tell those apart (IsString is true of +
// and $, IsArray of * and ~, and a map is only given out as a Go map). So
// its fields are read through msgFields, a copy of its layout, which
// messageLayout checks against the real type when the package loads: a
// valkey-go whose ValkeyMessage differs makes Do fail with
// errMessageLayout (and TestMessageLayout fail) instead of answering with
// wrong shapes.

// msgFields mirrors valkey.ValkeyMessage (valkey-go v1.0.79, message.go).
type msgFields struct {
	attrs  *valkey.ValkeyMessage
	bytes  *byte
	array  *valkey.ValkeyMessage
	intlen int64
	typ    byte
	ttl    [7]byte
}

// errMessageLayout: valkey-go's ValkeyMessage no longer has the fields
// msgFields mirrors.
var errMessageLayout = errors.New("valkey-go's ValkeyMessage changed: the replies of collection commands cannot be read (backends/valkey/reply.go)")

// layoutOK reports whether msgFields mirrors valkey.ValkeyMessage.
var layoutOK = messageLayout() == nil

// messageLayout compares msgFields's fields with ValkeyMessage's: names,
// types, offsets and the size.
func messageLayout() error {
	real, mine := reflect.TypeFor[valkey.ValkeyMessage](), reflect.TypeFor[msgFields]()
	if real.Size() != mine.Size() || real.NumField() != mine.NumField() {
		return errMessageLayout
	}
	for i := range mine.NumField() {
		r, m := real.Field(i), mine.Field(i)
		if r.Name != m.Name || r.Type != m.Type || r.Offset != m.Offset {
			return errMessageLayout
		}
	}
	return nil
}

// RESP3's type bytes, as valkey-go keeps them in ValkeyMessage.typ.
const (
	respBlobString     = '$'
	respSimpleString   = '+'
	respSimpleErr      = '-'
	respInteger        = ':'
	respNull           = '_'
	respFloat          = ','
	respBool           = '#'
	respBlobErr        = '!'
	respVerbatimString = '='
	respBigNumber      = '('
	respArray          = '*'
	respMap            = '%'
	respSet            = '~'
	respPush           = '>'
)

// fields are m's own fields (layoutOK must hold).
func fields(m *valkey.ValkeyMessage) *msgFields { return (*msgFields)(unsafe.Pointer(m)) }

// str is the bytes of a string reply; valkey-go reads each into a buffer
// of its own and keeps no reference to a reply it returned, so they are
// the caller's (and never changed: a Reply is read-only). An empty string
// is a non-nil empty slice.
func (f *msgFields) str() []byte {
	if f.bytes == nil || f.intlen == 0 {
		return []byte{}
	}
	return unsafe.Slice(f.bytes, f.intlen)
}

// elems are the elements of an aggregate reply (a map's keys and values
// alternating).
func (f *msgFields) elems() []valkey.ValkeyMessage {
	if f.array == nil {
		return nil
	}
	return unsafe.Slice(f.array, f.intlen)
}

// toReply converts a reply of the server, nested replies included. A RESP2
// reply has RESP2's types only (a nil array is a null, as a nil bulk is;
// backends.Passed.NullArray tells the RESP front which to write).
func toReply(m *valkey.ValkeyMessage) backends.Reply {
	f := fields(m)
	switch f.typ {
	case respSimpleString:
		return backends.Reply{Kind: backends.ReplyStatus, Str: f.str()}
	case respBlobString, respBigNumber:
		return backends.Reply{Kind: backends.ReplyBulk, Str: f.str()}
	case respVerbatimString:
		// "txt:…": the format is RESP3's; RESP2 sends the text as a bulk.
		s := f.str()
		if len(s) >= 4 && s[3] == ':' {
			s = s[4:]
		}
		return backends.Reply{Kind: backends.ReplyBulk, Str: s}
	case respSimpleErr, respBlobErr:
		return backends.Reply{Kind: backends.ReplyError, Str: f.str()}
	case respInteger:
		return backends.Reply{Kind: backends.ReplyInt, Int: f.intlen}
	case respBool:
		return backends.Reply{Kind: backends.ReplyBool, Int: f.intlen}
	case respFloat:
		// Redis writes inf, -inf and nan, which ParseFloat reads. Str
		// keeps the server's own text: Redis 7.0 writes %.17g, later
		// servers (Redis 7.2, Valkey) the shortest exact decimal.
		s := f.str()
		v, _ := strconv.ParseFloat(string(s), 64)
		return backends.Reply{Kind: backends.ReplyDouble, Float: v, Str: s}
	case respArray, respSet, respMap, respPush:
		kind := backends.ReplyArray
		switch f.typ {
		case respSet:
			kind = backends.ReplySet
		case respMap:
			kind = backends.ReplyMap
		}
		src := f.elems()
		out := make([]backends.Reply, len(src))
		for i := range src {
			out[i] = toReply(&src[i])
		}
		return backends.Reply{Kind: kind, Elems: out}
	}
	return backends.Reply{Kind: backends.ReplyNull} // respNull, and RESP2's nil bulk and nil array
}
