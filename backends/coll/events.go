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
	switch op := op.(type) {
	case *HSet:
		ev(ClassHash, "hset", 0)
	case *HSetNX:
		if op.Added {
			ev(ClassHash, "hset", 0)
		}
	case *Rem:
		if op.Removed > 0 {
			ev(classOf[op.Type], op.Name(), 0)
		}
	case *HIncrBy:
		ev(ClassHash, "hincrby", 0)
	case *HIncrByFloat:
		ev(ClassHash, "hincrbyfloat", 0)
	case *SAdd:
		if op.Added > 0 {
			ev(ClassSet, "sadd", 0)
		}
	case *SMove:
		if op.moved && !op.same { // the source's del before the add, as Redis sends them
			ev(ClassSet, "srem", 0)
			if op.Emptied(0) {
				ev(ClassGeneric, "del", 0)
			}
			ev(ClassSet, "sadd", 1)
		}
	case *SPop:
		if len(op.out) > 0 {
			ev(ClassSet, "spop", 0)
		}
	case *SetOp:
		if op.store && op.n > 0 {
			ev(ClassSet, op.name, 0)
		}
	case *Sort:
		if op.n > 0 {
			ev(ClassList, "sortstore", 0)
		}
	case *ZAdd:
		switch {
		case op.Incr && op.Done:
			ev(ClassZSet, "zincr", 0)
		case !op.Incr && op.Added+op.Updated > 0:
			ev(ClassZSet, "zadd", 0)
		}
	case *ZRemRange:
		if op.Removed > 0 {
			ev(ClassZSet, op.Name(), 0)
		}
	case *ZPop:
		if len(op.Popped) > 0 {
			ev(ClassZSet, op.Name(), 0)
		}
	case *ZRange:
		if op.Store && op.Stored > 0 {
			ev(ClassZSet, "zrangestore", 0)
		}
	case *ZSetOp:
		if op.store && len(op.result) > 0 {
			ev(ClassZSet, op.name, 0)
		}
	case *Push:
		if op.Len > 0 {
			ev(ClassList, pushName(op.End), 0)
		}
	case *Pop:
		if len(op.Elems) > 0 {
			ev(ClassList, popName(op.End), 0)
		}
	case *LSet:
		ev(ClassList, "lset", 0)
	case *LInsert:
		if op.result > 0 {
			ev(ClassList, "linsert", 0)
		}
	case *LRem:
		if op.removed > 0 {
			ev(ClassList, "lrem", 0)
		}
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

func pushName(e End) string {
	if e == Left {
		return "lpush"
	}
	return "rpush"
}

func popName(e End) string {
	if e == Left {
		return "lpop"
	}
	return "rpop"
}

func zpopName(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}
