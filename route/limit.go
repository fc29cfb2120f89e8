package route

import "github.com/pgcache/pgcache/backends"

// A route's max_value_bytes: no value longer is stored. A string's value
// is checked before the write; an update's once it says what it writes; a
// command on collections by its arguments (a member, a field's value, an
// element is one of them).

// valueLimit is a route's max_value_bytes; 0: none.
type valueLimit int64

func (l valueLimit) tooLarge(v []byte) bool { return l > 0 && int64(len(v)) > int64(l) }

// update wraps u so that it fails with ErrValueTooLarge rather than write
// a longer value.
func (l valueLimit) update(u backends.Update) backends.Update {
	if l <= 0 {
		return u
	}
	return limited{u, int64(l)}
}

// op refuses a command on collections with a longer argument.
func (l valueLimit) op(op backends.Op) error {
	if l <= 0 {
		return nil
	}
	if p, ok := op.(backends.Passable); ok {
		for _, a := range p.Request().Args {
			if l.tooLarge(a) {
				return backends.ErrValueTooLarge
			}
		}
	}
	return nil
}

// limited holds an update's writes to the route's max_value_bytes.
type limited struct {
	backends.Update
	max int64
}

func (l limited) Unwrap() backends.Update { return l.Update }

func (l limited) Apply(cur backends.Current) (backends.Change, error) {
	ch, err := l.Update.Apply(cur)
	if err == nil && ch.Kind == backends.Put && l.max > 0 && int64(len(ch.Val)) > l.max {
		return backends.Change{}, backends.ErrValueTooLarge
	}
	return ch, err
}
