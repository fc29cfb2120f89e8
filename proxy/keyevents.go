package proxy

import (
	"strings"

	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/pubsub"
	"github.com/pgcache/pgcache/route"
)

// Keyspace notifications (notify-keyspace-events): a write through this
// process's RESP front publishes, to this process's subscribers (a Redis
// node's are its own), __keyspace@0__:<key> <event> and
// __keyevent@0__:<event> <key> for the classes the flags enable. A key a
// write made gets "new" (class n) first, when its store says so (a
// string write's result, the marks of a command on collections). Expired
// and evicted keys come from the changes feed: the memory store's reports,
// and a PostgreSQL kv route's sweeps (every instance's, behind an L1).

// Flags of notify-keyspace-events, Redis's letters.
const (
	notifyKeyspace uint32 = 1 << iota // K
	notifyKeyevent                    // E
	notifyGeneric                     // g
	notifyString                      // $
	notifyList                        // l
	notifySet                         // s
	notifyHash                        // h
	notifyZSet                        // z
	notifyExpired                     // x
	notifyEvicted                     // e
	notifyStream                      // t
	notifyKeyMiss                     // m
	notifyModule                      // d
	notifyNew                         // n

	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash |
		notifyZSet | notifyExpired | notifyEvicted | notifyStream | notifyModule // A
)

// notifyLetters are the class letters, in the order Redis writes them. n
// (a key made) is one, though A does not include it.
var notifyLetters = []struct {
	letter byte
	flag   uint32
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet},
	{'h', notifyHash}, {'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted},
	{'t', notifyStream}, {'d', notifyModule}, {'n', notifyNew},
}

// parseNotifyFlags reads notify-keyspace-events; ok is false for a letter
// Redis does not know.
func parseNotifyFlags(s string) (flags uint32, ok bool) {
	for i := range len(s) {
		switch c := s[i]; c {
		case 'A':
			flags |= notifyAll
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 'm':
			flags |= notifyKeyMiss
		default:
			found := false
			for _, l := range notifyLetters {
				if l.letter == c {
					flags, found = flags|l.flag, true
				}
			}
			if !found {
				return 0, false
			}
		}
	}
	return flags, true
}

// formatNotifyFlags writes flags as CONFIG GET answers them: the classes
// (A for all of them), then K, E, m. As Redis 7.0's
// keyspaceEventsFlagsToString does, A stands for the classes it includes
// and n is written only without it: "AKEn" reads back as "AKE", though n
// stays set.
func formatNotifyFlags(flags uint32) string {
	var b strings.Builder
	if flags&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, l := range notifyLetters {
			if flags&l.flag != 0 {
				b.WriteByte(l.letter)
			}
		}
	}
	for _, l := range []struct {
		letter byte
		flag   uint32
	}{{'K', notifyKeyspace}, {'E', notifyKeyevent}, {'m', notifyKeyMiss}} {
		if flags&l.flag != 0 {
			b.WriteByte(l.letter)
		}
	}
	return b.String()
}

// setNotify sets notify-keyspace-events. While they publish expired
// events, the changes feed is told to report expired keys: a PostgreSQL
// kv route's sweeper then follows the deadlines, which it does not while
// nobody wants them.
func (s *Server) setNotify(flags uint32) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	was := wantsExpired(s.notify.Swap(flags))
	switch now := wantsExpired(flags); {
	case now && !was:
		s.changes.WantExpiries(1)
	case was && !now:
		s.changes.WantExpiries(-1)
	}
}

// wantsExpired reports whether flags publish expired events.
func wantsExpired(flags uint32) bool {
	return flags&notifyExpired != 0 && flags&(notifyKeyspace|notifyKeyevent) != 0
}

// classFlag is the flag of a class letter of package coll's events.
func classFlag(c byte) uint32 {
	for _, l := range notifyLetters {
		if l.letter == c {
			return l.flag
		}
	}
	return 0
}

// keyEvent publishes an event of class on key (as the client spells it),
// when the flags want it.
func (s *Server) keyEvent(class uint32, event, key string) {
	flags := s.notify.Load()
	if flags&class == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 {
		return
	}
	if flags&notifyKeyspace != 0 {
		s.pubsub.PublishLocal(pubsub.Channel, "__keyspace@0__:"+key, []byte(event))
	}
	if flags&notifyKeyevent != 0 {
		s.pubsub.PublishLocal(pubsub.Channel, "__keyevent@0__:"+event, []byte(key))
	}
}

// keyEvent publishes an event of one of a request's keys.
func (c *conn) keyEvent(class uint32, event string, key []byte) {
	if c.s.notify.Load() != 0 {
		c.s.keyEvent(class, event, string(key))
	}
}

// wantsNew reports whether the flags publish "new" events: only then does
// a write ask its store whether it made its key (backends.SetOptions
// .AskCreated, KV.AskCreated), which may cost the store more.
func (c *conn) wantsNew() bool {
	flags := c.s.notify.Load()
	return flags&notifyNew != 0 && flags&(notifyKeyspace|notifyKeyevent) != 0
}

// newKey publishes the "new" event of a key a write made (Redis's dbAdd),
// which goes before the write's own event.
func (c *conn) newKey(created bool, key []byte) {
	if created {
		c.keyEvent(notifyNew, "new", key)
	}
}

// collEvents publishes the events a command on collections caused.
func (c *conn) collEvents(args [][]byte, op coll.Command) {
	if c.s.notify.Load() == 0 {
		return
	}
	at := op.Request().KeyAt
	coll.Events(op, func(e coll.Event) {
		key := e.KeyName
		if key == nil {
			key = args[at[e.Key]]
		}
		c.s.keyEvent(classFlag(e.Class), e.Name, string(key))
	})
}

// expiries publishes the expired and evicted keys the stores report.
type expiries struct{ s *Server }

func (e expiries) Wrote(*route.Route, string, int64) {}

func (e expiries) Changed(ch changes.Change) {
	var class uint32
	var event string
	switch ch.Source {
	case changes.SourceExpiry:
		class, event = notifyExpired, "expired"
	case "eviction":
		class, event = notifyEvicted, "evicted"
	default:
		return
	}
	if e.s.notify.Load()&class == 0 {
		return
	}
	for _, k := range ch.Keys {
		for _, p := range ch.Route.Prefixes {
			e.s.keyEvent(class, event, p+k)
		}
	}
}

var _ changes.Subscriber = expiries{}
