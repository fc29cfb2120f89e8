package coll

import "github.com/pgcache/pgcache/backends"

// Keyspace events (notify-keyspace-events): what a command's last Run did
// to its keys, named as Redis 7.0 names it (t_hash.c, t_set.c, t_zset.c,
// t_list.c notifyKeyspaceEvent calls). A command that changed nothing
// sends none. A key the command made, which did not exist, gets a "new"
// before the command's first event about it, as Redis's dbAdd sends it
// while the command runs; a key the command emptied, which its store then
// deleted, gets a "del" after the command's own events, as Redis sends it.
// Both come from what the store marked (backends.MarkCreated,
// MarkEmptied): a store that passes the command on (Valkey) says neither.
// (On PostgreSQL a command's write to a key whose deadline had passed but
// whose row was still there says no "new", and a removal from one says
// "del", where Redis says "expired" and then "new", or "expired".)

// Event classes, as notify-keyspace-events names them.
const (
	ClassList    = 'l'
	ClassSet     = 's'
	ClassHash    = 'h'
	ClassZSet    = 'z'
	ClassGeneric = 'g'
	ClassNew     = 'n'
)

// classOf is the class of the events of a type of collection.
var classOf = [...]byte{backends.TypeList: ClassList, backends.TypeSet: ClassSet, backends.TypeZSet: ClassZSet, backends.TypeHash: ClassHash}

// Event is one keyspace event: its class, its name, and which of the
// command's keys (an index of its KeyAt) it is about, or the key itself
// (KeyName: the one a pop from several keys took from).
type Event struct {
	Class   byte
	Name    string
	Key     int
	KeyName []byte
}

// Events calls yield for each event op's last Do caused: the command's
// own, each key it made announced by a "new" before the first of them
// about it, then a "del" for each key it emptied (a *STORE command's
// destination, when its result was empty, among them).
func Events(op backends.Op, yield func(Event)) {
	p, ok := op.(backends.Passable)
	if !ok {
		commandEvents(op, yield)
		return
	}
	req := p.Request()
	var told, announced uint64 // the keys whose del the command's own events sent; whose new was sent
	announce := func(i int) {
		if i < 64 && req.Created(i) && announced&(1<<i) == 0 {
			announced |= 1 << i
			yield(Event{Class: ClassNew, Name: "new", Key: i})
		}
	}
	commandEvents(op, func(e Event) {
		if e.KeyName == nil {
			announce(e.Key)
		}
		if e.Name == "del" && e.KeyName == nil && e.Key < 64 {
			told |= 1 << e.Key
		}
		yield(e)
	})
	for i := range req.KeyAt {
		announce(i) // made, and no event of the command's own said so
	}
	for i := range req.KeyAt {
		if req.Emptied(i) && (i >= 64 || told&(1<<i) == 0) {
			yield(Event{Class: ClassGeneric, Name: "del", Key: i})
		}
	}
}

// commandEvents calls yield for each of the command's own events.
func commandEvents(op backends.Op, yield func(Event)) {
	ev := func(class byte, name string, key int) { yield(Event{Class: class, Name: name, Key: key}) }
	from := func(class byte, name string, key []byte) { yield(Event{Class: class, Name: name, KeyName: key}) }
	// on sends a command's one event about its key when it changed the key.
	on := func(changed bool, class byte, name string) {
		if changed {
			ev(class, name, 0)
		}
	}
	switch op := op.(type) {
	case *HSet:
		ev(ClassHash, "hset", 0)
	case *HSetNX:
		on(op.Added, ClassHash, "hset")
	case *Rem:
		on(op.Removed > 0, classOf[op.Type], op.Name())
	case *HIncrBy:
		ev(ClassHash, "hincrby", 0)
	case *HIncrByFloat:
		ev(ClassHash, "hincrbyfloat", 0)
	case *SAdd:
		on(op.Added > 0, ClassSet, "sadd")
	case *SMove:
		if op.moved && !op.same { // the source's del before the add, as Redis sends them
			ev(ClassSet, "srem", 0)
			if op.Emptied(0) {
				ev(ClassGeneric, "del", 0)
			}
			ev(ClassSet, "sadd", 1)
		}
	case *SPop:
		on(len(op.out) > 0, ClassSet, "spop")
	case *SetOp:
		on(op.store && op.n > 0, ClassSet, op.name)
	case *Sort:
		on(op.n > 0, ClassList, "sortstore")
	case *ZAdd:
		on(op.Incr && op.Done, ClassZSet, "zincr")
		on(!op.Incr && op.Added+op.Updated > 0, ClassZSet, "zadd")
	case *ZRemRange:
		on(op.Removed > 0, ClassZSet, op.Name())
	case *ZPop:
		on(len(op.Popped) > 0, ClassZSet, op.Name())
	case *ZRange:
		on(op.Store && op.Stored > 0, ClassZSet, "zrangestore")
	case *ZSetOp:
		on(op.store && len(op.result) > 0, ClassZSet, op.name)
	case *Push:
		on(op.Len > 0, ClassList, pushName(op.End))
	case *Pop:
		on(len(op.Elems) > 0, ClassList, popName(op.End))
	case *LSet:
		ev(ClassList, "lset", 0)
	case *LInsert:
		on(op.result > 0, ClassList, "linsert")
	case *LRem:
		on(op.removed > 0, ClassList, "lrem")
	case *LTrim:
		ev(ClassList, "ltrim", 0)
	case *LMove:
		if op.Found { // the push first, as Redis sends them
			ev(ClassList, pushName(op.To), 1)
			ev(ClassList, popName(op.From), 0)
		}
	case *BLMove:
		commandEvents(&op.LMove, yield)
	case *BPop:
		commandEvents(&op.LMPop, yield)
	case *LMPop:
		if op.Found {
			from(ClassList, popName(op.End), op.Key)
		}
	case *BLMPop:
		commandEvents(&op.LMPop, yield)
	case *ZMPop:
		if op.key != nil {
			from(ClassZSet, zpopName(op.max), op.key)
		}
	case *BZMPop:
		commandEvents(&op.ZMPop, yield)
	case *BZPop:
		commandEvents(&op.ZMPop, yield)
	}
}

func pushName(e End) string { return either(e == Left, "lpush", "rpush") }

func popName(e End) string { return either(e == Left, "lpop", "rpop") }

func zpopName(max bool) string { return either(max, "zpopmax", "zpopmin") }
