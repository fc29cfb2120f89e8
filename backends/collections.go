package backends

// Collections: hashes, sets, sorted sets and lists. A key holds one value
// of one Type; strings are served by the Backend methods above, the other
// types by Backend.Do, which runs an Op (one Redis command: HSET, ZADD,
// SINTERSTORE…) on the values of its keys.
//
// An Op is written once, against values held in memory (package coll: its
// Hash, Set, ZSet and List), and every store runs it in its own terms:
//
//   - a store that holds values in memory (the memory route, an L1 tier's
//     cache, an atomic run's scratch store) runs Op.Run on them, under
//     whatever makes the run atomic (the keys' locks);
//   - a store that can do the command itself recognises the Op's type and
//     does (PostgreSQL: one statement for HSET or ZRANGEBYSCORE; Valkey:
//     the request as the client sent it, see Passed), and must answer what
//     Run would have;
//   - otherwise it reads the values whole, runs Run on them and writes back
//     what changed (PostgreSQL's path for the rarer commands).
//
// So a new command is one Op and one handler, never a method of every store.

// Type is the type of value a key holds, as TYPE names it.
type Type uint8

const (
	TypeNone   Type = iota // the key does not exist
	TypeString             // Get, Set, Update
	TypeList
	TypeSet
	TypeZSet
	TypeHash
)

var typeNames = [...]string{"none", "string", "list", "set", "zset", "hash"}

// String is the type's name as TYPE answers it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// ParseType reads a type name as SCAN … TYPE gives it (any case); ok is
// false for a name that is no type.
func ParseType(name string) (t Type, ok bool) {
	for i, n := range typeNames {
		if i > 0 && len(n) == len(name) && equalFold(n, name) {
			return Type(i), true
		}
	}
	return TypeNone, false
}

func equalFold(lower, s string) bool {
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// Value is a collection held in memory: a *coll.Hash, *coll.Set,
// *coll.ZSet or *coll.List. Members, fields and the bytes of values a
// Value hands out are never modified afterwards (a change replaces them),
// so a caller may keep them after the run that read them.
type Value interface {
	// Type is the value's type: TypeHash, TypeSet, TypeZSet or TypeList.
	Type() Type
	// Len is the number of members (fields, elements); a value with none
	// is no value: the store deletes its key.
	Len() int
	// Weight is about how many bytes the value holds, kept up to date as
	// it changes (O(1)): what a memory bound counts.
	Weight() int64
	// Clone returns a copy that shares no mutable state with the value.
	Clone() Value
}

// Writes says which of an Op's keys it may write.
type Writes uint8

const (
	ReadOnly    Writes = iota // writes none
	WritesFirst               // writes keys[0] only (the destination of SINTERSTORE, ZRANGESTORE…)
	WritesAll                 // may write any of its keys
)

// Op is one command on collections: the command's arguments, its result
// once run, and Run, what it does to values in memory.
//
// Run may be called more than once for one Do (a store that retries after
// a conflict), so it keeps its results in fields that each run overwrites.
type Op interface {
	// Name is the command's lowercase name ("hset", "zrangebyscore"): its
	// metrics label and its keyspace event.
	Name() string
	// Writes says which keys Run may change.
	Writes() Writes
	// Run does the command on the values of its keys, as v serves them.
	// An error it returns is the command's (ErrWrongType, a Refusal); a
	// store that rolls back (an atomic run, a transaction) undoes what Run
	// changed before it failed, one that does not keeps it, as Redis does.
	Run(v View) error
}

// View serves an Op's keys to its Run: keys[i] of Backend.Do is index i. A
// key named twice (SMOVE s s m) is one value, whichever index Run uses.
type View interface {
	// Get returns keys[i]'s value, nil when the key does not exist. A key
	// of another type than want (TypeNone: any collection, never a
	// string) fails with ErrWrongType. Run may change the value in place
	// when it writes keys[i]: the store keeps it, with its expiry, and
	// deletes the key when Run leaves it empty.
	Get(i int, want Type) (Value, error)
	// Put makes v the value of keys[i], whatever it held before (a string,
	// another type), with no expiry: what SINTERSTORE does to its
	// destination, or HSET to a key that does not exist (Put an empty
	// value, then fill it). A nil v, or one Run leaves empty, deletes the
	// key.
	Put(i int, v Value)
	// Type is the type of keys[i]'s value, TypeNone when it does not exist.
	Type(i int) Type
}

// Passed is embedded in an Op made from a client's request, so that a store
// that has the command itself (Valkey) can send the request as it came and
// hand back the reply as it got it: the RESP front writes Reply as it is
// when a store set it, and the Op's own result fields otherwise.
type Passed struct {
	// Args is the request, the command's name first; it is borrowed for
	// the duration of Do.
	Args [][]byte
	// KeyAt are the indexes of the request's keys in Args, in the order of
	// Do's keys.
	KeyAt []int
	// RESP is the protocol the client speaks (2 or 3): a store that passes
	// the request on asks its server in the same one, so the reply has
	// the shapes the client expects (ZRANGE … WITHSCORES is flat in RESP2,
	// pairs in RESP3).
	RESP int
	// NullArray says that the command's missing reply is a nil array in
	// RESP2 (LPOP with a count, BLPOP's timeout), not a nil bulk: a RESP2
	// server's reply does not tell them apart once parsed.
	NullArray bool
	// Reply is the store's reply when it passed the request on; its Kind
	// is ReplyNone otherwise.
	Reply Reply

	// emptied has bit i set when the last Do deleted keys[i] because the
	// command left it empty, as Redis deletes a collection it empties (and
	// sends "del"); created, when it made keys[i], which did not exist (or
	// had expired), as Redis adds a key (and sends "new"). Set by the
	// stores that know (MarkEmptied, MarkCreated), not by one that passes
	// the request on.
	emptied, created uint64
}

// Request returns the request the Op came from (see Passable).
func (p *Passed) Request() *Passed { return p }

// Emptied reports whether the last Do deleted keys[i] because the command
// left it empty.
func (p *Passed) Emptied(i int) bool { return i < 64 && p.emptied&(1<<i) != 0 }

// Created reports whether the last Do made keys[i], which did not exist.
func (p *Passed) Created(i int) bool { return i < 64 && p.created&(1<<i) != 0 }

// MarkEmptied says that op's Do deleted keys[i] because the command left it
// empty (for keyspace events); a store calls it as it deletes the key, and
// ClearMarks when a Do starts. An Op made otherwise than from a request
// has nothing to mark.
func MarkEmptied(op Op, i int) {
	if p, ok := op.(Passable); ok && i < 64 {
		p.Request().emptied |= 1 << i
	}
}

// MarkCreated says that op's Do made keys[i], which did not exist (for
// keyspace events), as MarkEmptied says it emptied one: a store calls it as
// it writes a value where it found none. A key the command makes and
// leaves empty (SREM of a key that does not exist) was not made.
func MarkCreated(op Op, i int) {
	if p, ok := op.(Passable); ok && i < 64 {
		p.Request().created |= 1 << i
	}
}

// ClearMarks forgets what an earlier Do (or an earlier run of this one,
// which a store may retry) marked.
func ClearMarks(op Op) {
	if p, ok := op.(Passable); ok {
		p.Request().emptied, p.Request().created = 0, 0
	}
}

// Unchanging is an Op that tells, once it has run, which of the keys it
// may write it left as they were (SMOVE of a member the destination has):
// WATCH does not take them for written. An Op a store passed on without
// running it (Valkey) leaves none unchanged.
type Unchanging interface {
	Unchanged(i int) bool
}

// Passable is an Op with the request it came from (it embeds Passed).
type Passable interface {
	Request() *Passed
}

// ReplyKind is the kind of a Reply, RESP3's types.
type ReplyKind uint8

const (
	ReplyNone   ReplyKind = iota // no reply: the store did not pass the request on
	ReplyStatus                  // +OK: Str
	ReplyError                   // -ERR …: Str
	ReplyInt                     // :n: Int
	ReplyBulk                    // $n: Str
	ReplyNull                    // _ (RESP2: a nil bulk, or a nil array where the command answers arrays)
	ReplyDouble                  // ,f: Float (RESP2: a bulk)
	ReplyBool                    // #t: Int 1 or 0 (RESP2: an integer)
	ReplyArray                   // *n: Elems
	ReplyMap                     // %n: Elems, key and value alternating (RESP2: an array)
	ReplySet                     // ~n: Elems (RESP2: an array)
)

// Reply is a reply as a store sent it, in RESP3's types.
type Reply struct {
	Kind  ReplyKind
	Int   int64
	Float float64
	Str   []byte
	Elems []Reply
}
