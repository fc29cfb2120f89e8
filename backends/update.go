package backends

import (
	"context"
	"strconv"
	"time"
)

// An Update is a read-modify-write of one key: Apply is shown the key as it
// is and says what it becomes. Backend.Update runs it atomically with
// respect to every other write of the key (otter's compute, a locked row,
// a watched Valkey key).
//
// Every command that reads a key to decide its write (INCRBY, GETDEL,
// EXPIRE, APPEND, SETRANGE…) is an Update defined once, here or beside
// its command, not a method of every backend. A backend may recognise an
// Update's type and run it natively (one SQL statement for INCRBY, Valkey's
// own GETDEL); the result must be the one Apply would give.
//
// Apply may run more than once for one Update (a store that retries after
// a conflicting write), so it keeps its results in fields that each run
// overwrites, and never changes cur.Val, which it borrows.
//
// An update that may make its key (INCRBY, APPEND, SETRANGE, SETBIT,
// INCRBYFLOAT) says so in its Created field, for Redis's "new" keyspace
// event: Apply sets it when it puts a value where cur found none, so every
// store that runs Apply says it as it read the key; a native way of running
// the update says it too (PostgreSQL's IncrBy) or leaves it false (Valkey's).
type Update interface {
	// Op names the update in metrics ("incrby", "append"): a short constant.
	Op() string
	// Apply returns what the key becomes, or an error (ErrNotInteger…)
	// that leaves the key as it is and is returned by Backend.Update.
	Apply(cur Current) (Change, error)
}

// Current is a key as an Update finds it.
type Current struct {
	// Val is the value, nil when the key is absent or expired.
	Val []byte
	// TTL is the remaining lifetime by the store's clock, TTLPersistent
	// for none. It is meaningful only when Val is not nil.
	TTL time.Duration
}

// Found reports whether the key exists.
func (c Current) Found() bool { return c.Val != nil }

// ChangeKind says what an Update does to its key.
type ChangeKind uint8

const (
	Keep   ChangeKind = iota // leave the key as it is
	Put                      // store Change.Val with Change.TTL
	Delete                   // remove the key
)

// Change is what an Update does to its key.
type Change struct {
	Kind ChangeKind
	// Val is the new value of a Put; the backend copies it.
	Val []byte
	// TTL is the expiry of a Put: TTLKeep keeps the key's (none for a new
	// key), TTLNone removes it, TTLRelative and TTLAt set one. A deadline
	// that is not in the future deletes the key.
	TTL TTL
}

// The updates every backend runs, natively where it can.

// GetDel returns the value of the key and removes it (GETDEL).
type GetDel struct {
	Val   []byte
	Found bool
}

func (*GetDel) Op() string { return "getdel" }

func (u *GetDel) Apply(cur Current) (Change, error) {
	u.Val, u.Found = cur.Val, cur.Found()
	if !u.Found {
		return Change{}, nil
	}
	return Change{Kind: Delete}, nil
}

// GetEx returns the value of the key and changes its expiry as TTL says
// (GETEX; TTLNone persists it). A TTLKeep GetEx is a Get: callers read.
type GetEx struct {
	TTL   TTL
	Val   []byte
	Found bool
}

func (*GetEx) Op() string { return "getex" }

func (u *GetEx) Apply(cur Current) (Change, error) {
	u.Val, u.Found = cur.Val, cur.Found()
	if !u.Found || u.TTL.Mode == TTLKeep {
		return Change{}, nil
	}
	return Change{Kind: Put, Val: cur.Val, TTL: u.TTL}, nil
}

// IncrBy adds Delta to the decimal integer at the key (an absent key counts
// as 0), keeping its expiry. It fails with ErrNotInteger or ErrOverflow.
type IncrBy struct {
	Delta   int64
	Result  int64
	Created bool
}

func (*IncrBy) Op() string { return "incrby" }

func (u *IncrBy) Apply(cur Current) (Change, error) {
	u.Created = false
	n, err := numberAt(cur, ParseInt, ErrNotInteger)
	if err != nil {
		return Change{}, err
	}
	if (u.Delta > 0 && n > maxInt64-u.Delta) || (u.Delta < 0 && n < minInt64-u.Delta) {
		return Change{}, ErrOverflow
	}
	u.Result, u.Created = n+u.Delta, !cur.Found()
	return Change{Kind: Put, Val: strconv.AppendInt(nil, u.Result, 10), TTL: TTL{Mode: TTLKeep}}, nil
}

// numberAt is the number at the key as parse reads it, 0 for an absent
// key (INCRBY, INCRBYFLOAT), or notNumber.
func numberAt[N int64 | float64](cur Current, parse func([]byte) (N, bool), notNumber error) (N, error) {
	if !cur.Found() {
		return 0, nil
	}
	n, ok := parse(cur.Val)
	if !ok {
		return 0, notNumber
	}
	return n, nil
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// Expire changes the expiry of an existing key: TTL is TTLRelative, TTLAt,
// or TTLNone (PERSIST); Cond is EXPIRE's NX/XX/GT/LT. A deadline that is
// not in the future deletes the key. Changed is false when the key is
// absent, when Cond refused, or (TTLNone) when it had no expiry.
type Expire struct {
	TTL     TTL
	Cond    ExpireCond
	Changed bool
}

func (*Expire) Op() string { return "expire" }

func (u *Expire) Apply(cur Current) (Change, error) {
	u.Changed = false
	if !cur.Found() {
		return Change{}, nil
	}
	if u.TTL.Mode == TTLNone {
		if cur.TTL == TTLPersistent {
			return Change{}, nil
		}
		u.Changed = true
		return Change{Kind: Put, Val: cur.Val, TTL: u.TTL}, nil
	}
	// Compare lifetimes from one instant: the store's clock gave the old
	// one, the new one is measured from the same now.
	newTTL := u.TTL.D
	if u.TTL.Mode == TTLAt {
		newTTL = time.Until(u.TTL.At)
	}
	var oldExp, newExp int64 // ExpireAllowed's units, 0 for none
	if cur.TTL != TTLPersistent {
		oldExp = max(int64(cur.TTL), 1)
	}
	newExp = max(int64(newTTL), 1)
	if !ExpireAllowed(u.Cond, oldExp, newExp) {
		return Change{}, nil
	}
	u.Changed = true
	if newTTL <= 0 {
		return Change{Kind: Delete}, nil
	}
	return Change{Kind: Put, Val: cur.Val, TTL: u.TTL}, nil
}

// Convenience wrappers, so a caller reads as it did when each update was a
// method of Backend.

// DoGetDel runs a GetDel.
func DoGetDel(ctx context.Context, b Backend, key string) ([]byte, bool, error) {
	u := GetDel{}
	err := b.Update(ctx, key, &u)
	return u.Val, u.Found, err
}

// DoGetEx runs a GetEx; a TTLKeep one is a Get.
func DoGetEx(ctx context.Context, b Backend, key string, ttl TTL) ([]byte, bool, error) {
	if ttl.Mode == TTLKeep {
		return b.Get(ctx, key)
	}
	u := GetEx{TTL: ttl}
	err := b.Update(ctx, key, &u)
	return u.Val, u.Found, err
}

// DoIncrBy runs an IncrBy.
func DoIncrBy(ctx context.Context, b Backend, key string, delta int64) (int64, error) {
	u := IncrBy{Delta: delta}
	err := b.Update(ctx, key, &u)
	return u.Result, err
}

// DoExpire runs an Expire.
func DoExpire(ctx context.Context, b Backend, key string, ttl TTL, cond ExpireCond) (bool, error) {
	u := Expire{TTL: ttl, Cond: cond}
	err := b.Update(ctx, key, &u)
	return u.Changed, err
}

// Native returns the update inside any wrappers (a route's value limit
// wraps every update), for a backend's switch over the updates it runs
// natively. Those write nothing longer than the key held, or an integer's
// digits, so skipping the wrappers' checks of what Apply returns loses none.
func Native(u Update) Update {
	for {
		w, ok := u.(interface{ Unwrap() Update })
		if !ok {
			return u
		}
		u = w.Unwrap()
	}
}

// Native ways of running the updates above, optional capabilities of a
// backend: RunUpdate uses them, so a backend's Update is RunUpdate with
// its generic path. Call them only through Update: a wrapper (an L1 tier)
// must see every write.
type (
	NativeGetDel interface {
		GetDel(ctx context.Context, key string) ([]byte, bool, error)
	}
	NativeGetEx interface {
		GetEx(ctx context.Context, key string, ttl TTL) ([]byte, bool, error)
	}
	NativeIncrBy interface {
		// IncrBy returns the new value, and whether the increment made the
		// key (IncrBy.Created; false when the store cannot say).
		IncrBy(ctx context.Context, key string, delta int64) (n int64, created bool, err error)
	}
	NativeExpire interface {
		Expire(ctx context.Context, key string, ttl TTL, cond ExpireCond) (bool, error)
	}
)

// RunUpdate runs u the native way b has for its type, if any, and through
// generic otherwise.
func RunUpdate(ctx context.Context, b any, key string, u Update, generic func(context.Context, string, Update) error) (err error) {
	switch nu := Native(u).(type) {
	case *GetDel:
		if n, ok := b.(NativeGetDel); ok {
			nu.Val, nu.Found, err = n.GetDel(ctx, key)
			return err
		}
	case *GetEx:
		if n, ok := b.(NativeGetEx); ok {
			nu.Val, nu.Found, err = n.GetEx(ctx, key, nu.TTL)
			return err
		}
	case *IncrBy:
		if n, ok := b.(NativeIncrBy); ok {
			nu.Result, nu.Created, err = n.IncrBy(ctx, key, nu.Delta)
			return err
		}
	case *Expire:
		if n, ok := b.(NativeExpire); ok {
			nu.Changed, err = n.Expire(ctx, key, nu.TTL, nu.Cond)
			return err
		}
	}
	return generic(ctx, key, u)
}
