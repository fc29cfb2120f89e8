package coll

import (
	"unsafe"

	"github.com/pgcache/pgcache/backends"
)

// Writer is where a Command writes its reply: the RESP front's connection,
// in the protocol the client speaks (RESP2 or RESP3). Each method writes
// one element; Array, Map and Set announce how many follow.
type Writer interface {
	Int(n int64)
	Bulk(b []byte)
	Status(s string)
	// Null is a missing value: RESP2's nil bulk, RESP3's null.
	Null()
	// NullArray is a missing array: RESP2's nil array, RESP3's null.
	NullArray()
	// Array announces n elements.
	Array(n int)
	// Map announces n pairs (RESP2: an array of 2n elements).
	Map(n int)
	// Set announces n elements of a set (RESP2: an array).
	Set(n int)
	// Double is a score: RESP3's double, RESP2's bulk, formatted as Redis
	// formats scores.
	Double(f float64)
	// RESP3 reports whether the client speaks RESP3, where Redis answers
	// some pairs (ZRANGE … WITHSCORES, HRANDFIELD … WITHVALUES) as arrays
	// of two rather than flat.
	RESP3() bool
}

// Command is an Op made from a client's request: it carries the request
// (for a store that passes it on) and writes its own reply.
type Command interface {
	backends.Op
	backends.Passable
	// Reply writes the result of the last Run.
	Reply(w Writer)
}

// PassedWriter is a Writer that also writes what only a reply a store
// passed on holds: an error, and RESP3's boolean.
type PassedWriter interface {
	Writer
	Error(msg string)
	// Bool is RESP3's #t or #f, RESP2's 1 or 0.
	Bool(b bool)
}

// Answer writes op's answer: the reply its store passed on (in the
// protocol the client speaks: the store asked in it), or, for a store that
// ran it, the Op's own.
func Answer(w PassedWriter, op Command) {
	if req := op.Request(); req.Reply.Kind != backends.ReplyNone {
		writePassed(w, req.Reply, req.NullArray)
		return
	}
	op.Reply(w)
}

// writePassed writes r; nullArray says what its null is in RESP2.
func writePassed(w PassedWriter, r backends.Reply, nullArray bool) {
	switch r.Kind {
	case backends.ReplyStatus:
		w.Status(string(r.Str))
	case backends.ReplyError:
		w.Error(string(r.Str))
	case backends.ReplyInt:
		w.Int(r.Int)
	case backends.ReplyBulk:
		w.Bulk(r.Str)
	case backends.ReplyNull:
		if nullArray {
			w.NullArray()
		} else {
			w.Null()
		}
	case backends.ReplyDouble:
		w.Double(r.Float)
	case backends.ReplyBool:
		w.Bool(r.Int != 0)
	case backends.ReplyArray, backends.ReplySet, backends.ReplyMap:
		switch r.Kind {
		case backends.ReplyArray:
			w.Array(len(r.Elems))
		case backends.ReplySet:
			w.Set(len(r.Elems))
		default:
			w.Map(len(r.Elems) / 2)
		}
		for _, e := range r.Elems {
			writePassed(w, e, false)
		}
	}
}

// The shapes of reply several commands share.

// bulkOrNull writes b, or nil when it was not found.
func bulkOrNull(w Writer, b []byte, found bool) {
	if !found {
		w.Null()
		return
	}
	w.Bulk(b)
}

// bulks writes elems as an array of bulk strings.
func bulks(w Writer, elems [][]byte) {
	w.Array(len(elems))
	for _, e := range elems {
		w.Bulk(e)
	}
}

// bulksOrNull writes elems as an array of bulk strings, nil for a nil one.
func bulksOrNull(w Writer, elems [][]byte) {
	w.Array(len(elems))
	for _, e := range elems {
		if e == nil {
			w.Null()
		} else {
			w.Bulk(e)
		}
	}
}

// poppedFrom writes the head of the reply of a pop from the first of
// several keys that holds something (LMPOP, BLPOP, ZMPOP, BZPOPMIN…): the
// null array when nothing was popped, else an array of n whose first
// element is that key. It reports whether the rest is to follow.
func poppedFrom(w Writer, key []byte, found bool, n int) bool {
	if !found {
		w.NullArray()
		return false
	}
	w.Array(n)
	w.Bulk(key)
	return true
}

// writeMembers writes members as a set (RESP3's ~, an array in RESP2).
func writeMembers(w Writer, ms []string) {
	w.Set(len(ms))
	for _, m := range ms {
		w.Bulk(bytesOf(m))
	}
}

// writeEntries answers entries as Redis's range replies: members, or with
// scores, member and score flat in RESP2 and in pairs in RESP3.
func writeEntries(w Writer, es []ZEntry, withScores bool) {
	pairs := withScores && w.RESP3()
	if withScores && !pairs {
		w.Array(2 * len(es))
	} else {
		w.Array(len(es))
	}
	for _, e := range es {
		if pairs {
			w.Array(2)
		}
		w.Bulk(bytesOf(e.Member))
		if withScores {
			w.Double(e.Score)
		}
	}
}

// Parser reads a request (the command's name first) into a Command, or
// returns the error Redis would answer, before any key is looked at.
type Parser func(args [][]byte) (Command, error)

// bytesOf is s as bytes, without a copy: members are strings that never
// change, so their bytes can be handed out (backends.Value).
func bytesOf(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// stringOf is b as a string, without a copy, for a lookup that keeps none.
func stringOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
