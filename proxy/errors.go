package proxy

import (
	"bytes"
	"errors"
	"strings"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Error replies, in Redis 7's words, so clients react to them as they do to
// Redis. The RESP error line is "-" plus one of these.
const (
	errSyntax          = "ERR syntax error"
	errNotInteger      = "ERR value is not an integer or out of range"
	errOverflow        = "ERR increment or decrement would overflow"
	errDecrOverflow    = "ERR decrement would overflow"
	errDBIndex         = "ERR DB index is out of range"
	errValueTooLarge   = "ERR value too large"
	errProtoVersion    = "ERR Protocol version is not an integer or out of range"
	errNoProto         = "NOPROTO unsupported protocol version"
	errWrongPass       = "WRONGPASS invalid username-password pair or user is disabled."
	errNoAuth          = "NOAUTH Authentication required."
	errHelloNoAuth     = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errClientName      = "ERR Client names cannot contain spaces, newlines or special characters."
	errExpireNXOthers  = "ERR NX and XX, GT or LT options at the same time are not compatible"
	errExpireGTLT      = "ERR GT and LT options at the same time are not compatible"
	errAuthNoPassword  = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errMaxClients      = "ERR max number of clients reached"
	errNoSuchKey       = "ERR no such key"
	errSameObject      = "ERR source and destination objects are the same"
	errInvalidCursor   = "ERR invalid cursor"
	errNotInt32        = "ERR value is out of range, value must between -2147483648 and 2147483647"
	errCrossRoute      = "ERR source and destination keys are on different pgcache routes"
	maxQuotedArgLength = 128 // Redis quotes at most this much of a client's input in an error
)

// errArity is Redis's reply to a command called with the wrong number of
// arguments; name is the command's lowercase full name ("client|setname").
func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// errUnknownCommand quotes the command and the start of its arguments as
// Redis 7 does, trailing space included: each argument is cut at a NUL (Redis
// prints them as C strings) and the list stops once it passes 128 bytes.
func errUnknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(clip(args[0], maxQuotedArgLength))
	b.WriteString("', with args beginning with: ")
	n := 0
	for _, a := range args[1:] {
		if n >= maxQuotedArgLength {
			break
		}
		a = clip(a, maxQuotedArgLength-n)
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
		n += len(a) + 3
	}
	return b.String()
}

// errUnknownSubcommand is Redis's reply to "CLIENT FOO".
func errUnknownSubcommand(container string, sub []byte) string {
	return "ERR unknown subcommand '" + string(clip(sub, maxQuotedArgLength)) +
		"'. Try " + strings.ToUpper(container) + " HELP."
}

// errExpireTime is Redis's reply to a bad or overflowing expire time; cmd
// is the lowercase command name.
func errExpireTime(cmd string) string {
	return "ERR invalid expire time in '" + cmd + "' command"
}

// errNoRoute is the reply for a key that no route owns (there is no
// catch-all route).
func errNoRoute(key []byte) string {
	msg := "ERR no route for key '" + string(clip(key, maxQuotedArgLength)) + "'"
	if bytes.HasPrefix(key, crudMark) {
		msg += ": no table route serves the table it names"
	}
	return msg
}

var crudMark = []byte(backends.CRUDMark)

// clip cuts b at its first NUL and at n bytes, as C's "%.*s" prints it.
func clip(b []byte, n int) []byte {
	if i := indexNUL(b); i >= 0 {
		b = b[:i]
	}
	return b[:min(len(b), n)]
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// backendError turns a backend's error into the reply Redis would give, or
// the closest one: errors a client caused read as Redis's, a store that is
// down names its backend, and anything else is passed on with its text.
func backendError(r *route.Route, err error) string {
	var refused backends.Refusal
	switch {
	case errors.As(err, &refused):
		return string(refused)
	case errors.Is(err, backends.ErrWrongType):
		return backends.ErrWrongType.Error()
	case errors.Is(err, backends.ErrNotInteger):
		return errNotInteger
	case errors.Is(err, backends.ErrOverflow):
		return errOverflow
	case errors.Is(err, backends.ErrValueTooLarge):
		return errValueTooLarge
	case errors.Is(err, backends.ErrBadKey), errors.Is(err, backends.ErrBadValue):
		return "ERR " + err.Error()
	case errors.Is(err, backends.ErrUnavailable):
		return "ERR backend " + r.BackendName + " unavailable"
	}
	return "ERR backend " + r.BackendName + ": " + err.Error()
}
