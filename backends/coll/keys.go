package coll

import "github.com/pgcache/pgcache/backends"

// Commands on a key of any type, as Ops: a store answers them as it
// answers the others (TYPE of a PostgreSQL row reads its kind; Valkey
// passes them on).

// TypeOf is TYPE key.
type TypeOf struct {
	backends.Passed
	Type backends.Type
}

// ParseType reads TYPE.
func ParseType(args [][]byte) (Command, error) {
	op := &TypeOf{}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*TypeOf) Name() string            { return "type" }
func (*TypeOf) Writes() backends.Writes { return backends.ReadOnly }

func (op *TypeOf) Run(v backends.View) error {
	op.Type = v.Type(0)
	return nil
}

func (op *TypeOf) Reply(w Writer) { w.Status(op.Type.String()) }

// Of is the type the last Do found: Run's, or the one the server of a
// store that passed the request on answered.
func (op *TypeOf) Of() backends.Type {
	if r := op.Passed.Reply; r.Kind == backends.ReplyStatus {
		t, _ := backends.ParseType(string(r.Str))
		return t
	}
	return op.Type
}

// Inspect is OBJECT ENCODING key and MEMORY USAGE key of a collection:
// what Redis 7.0 reports of how it holds it (listpack, hashtable, intset,
// skiplist, quicklist), and the bytes its store counts for its value
// (Weight). Of a string it says only that it is one: the RESP front reads
// the value (int, embstr or raw; its length).
type Inspect struct {
	backends.Passed
	memory   bool          // MEMORY USAGE: Reply answers Bytes, not Encoding
	Type     backends.Type // TypeNone: no such key
	Encoding string        // a collection's
	Bytes    int64         // a collection's
}

// at2 is the KeyAt of the commands whose key is their second argument
// (after a subcommand).
var at2 = []int{2}

// ParseObjectEncoding reads OBJECT ENCODING key.
func ParseObjectEncoding(args [][]byte) (Command, error) {
	op := &Inspect{}
	op.Args, op.KeyAt = args, at2
	return op, nil
}

// ParseMemoryUsage reads MEMORY USAGE key [SAMPLES count]; the RESP front
// checks the options first, as Redis does before it looks the key up.
func ParseMemoryUsage(args [][]byte) (Command, error) {
	op := &Inspect{memory: true}
	op.Args, op.KeyAt = args, at2
	return op, nil
}

func (op *Inspect) Name() string         { return either(op.memory, "memory", "object") }
func (*Inspect) Writes() backends.Writes { return backends.ReadOnly }

func (op *Inspect) Run(v backends.View) error {
	op.Type, op.Encoding, op.Bytes = v.Type(0), "", 0
	if op.Type == backends.TypeNone || op.Type == backends.TypeString {
		return nil
	}
	val, err := v.Get(0, backends.TypeNone)
	if err != nil || val == nil {
		return err
	}
	op.Encoding = val.(interface{ Encoding(*Limits) string }).Encoding(LimitsOf(v))
	op.Bytes = val.Weight()
	return nil
}

// Reply answers a collection's encoding or size, or nil for no key; a
// string's is the front's to answer.
func (op *Inspect) Reply(w Writer) {
	switch {
	case op.memory && op.Type != backends.TypeNone:
		w.Int(op.Bytes)
	case !op.memory && op.Encoding != "":
		w.Bulk([]byte(op.Encoding))
	default:
		w.Null()
	}
}

// StringEncoding is what OBJECT ENCODING reports of a string as Redis 7.0
// stores it: int for an integer within a long (string2l), embstr up to
// 44 bytes, raw beyond.
func StringEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := backends.ParseInt(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}
