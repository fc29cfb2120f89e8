package coll

import "slices"

// KeyAt of the commands whose keys are their first argument (at1), or
// their first two (at12).
var (
	at1  = []int{1}
	at12 = []int{1, 2}
)

// is reports whether arg is the word w (lowercase), in any case.
func is(arg []byte, w string) bool {
	if len(arg) != len(w) {
		return false
	}
	for i, c := range arg {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// either is yes when b, else no: which of two names a flag picks (a
// command's, ZPOPMIN or ZPOPMAX; an end's; an encoding's).
func either(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// lower is a command's name in lowercase, for error texts.
func lower(name []byte) string {
	b := make([]byte, len(name))
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return string(b)
}

// clone copies an argument a value keeps: requests are read into buffers
// that are reused.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	return slices.Clone(b)
}

// parsed is the answer of a parser whose op reads its own arguments: op,
// or err and no Command (not a nil op in one).
func parsed(op Command, err error) (Command, error) {
	if err != nil {
		return nil, err
	}
	return op, nil
}

// keysAt is the KeyAt of n keys from args[first].
func keysAt(first, n int) []int {
	at := make([]int, n)
	for i := range at {
		at[i] = first + i
	}
	return at
}

// IndexRange is a range of positions as LRANGE, LTRIM, ZRANGE and
// ZREMRANGEBYRANK read it: Start and Stop, 0-based and inclusive, a
// negative one counted from the end.
type IndexRange struct {
	Start, Stop int64
}

// parse reads start and stop, integers.
func (r *IndexRange) parse(start, stop []byte) (err error) {
	if r.Start, err = longArg(start); err == nil {
		r.Stop, err = longArg(stop)
	}
	return err
}

// span is the range over n members as indexes 0 <= from <= to < n, or ok
// false when it is empty.
func (r IndexRange) span(n int) (from, to int, ok bool) {
	ln := int64(n)
	start, stop := r.Start, r.Stop
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	start = max(start, 0)
	if start > stop || start >= ln {
		return 0, 0, false
	}
	return int(start), int(min(stop, ln-1)), true
}
