package proxy

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/pgcache/pgcache/internal/auth"
)

// CLIENT LIST, INFO, KILL, NO-EVICT, REPLY, GETREDIR, HELP: connections
// seen from others. A connection's state belongs to its goroutine; what
// other connections read of it (seen) is published at the end of each
// batch when it changed (publish), so the request path pays a few
// comparisons per batch, not an atomic store per command.

// seen is what other connections read about this one.
type seen struct {
	cmd     atomic.Pointer[command]
	active  atomic.Int64 // the last batch, unix ms by the server's clock
	multi   atomic.Int32 // -1, or the requests queued inside MULTI
	proto   atomic.Int32
	rbuf    atomic.Int64 // the read buffer's size
	obuf    atomic.Int64 // the output buffer's capacity
	name    atomic.Pointer[string]
	user    atomic.Pointer[string] // nil: default
	noEvict atomic.Bool
}

// shown is what was last published in seen.
type shown struct {
	cmd        *command
	active     int64
	multi      int32
	proto      int
	rbuf, obuf int
}

// CLIENT REPLY's states, as Redis's CLIENT_REPLY_OFF, _SKIP, _SKIP_NEXT.
const (
	muteOff      = 1 << iota // every reply is dropped until CLIENT REPLY ON
	muteSkip                 // the reply of the command running is dropped
	muteSkipNext             // set by CLIENT REPLY SKIP: the next command's reply is dropped
)

// initSeen fills in what a new connection shows before its first batch.
func (c *conn) initSeen() {
	c.born = c.s.clock.Load()
	c.pub.active.Store(c.born)
	c.pub.multi.Store(-1)
	c.pub.proto.Store(int32(c.proto))
	c.shown = shown{active: c.born, multi: -1, proto: c.proto}
}

// publish updates seen at the end of a batch.
func (c *conn) publish() {
	sh := &c.shown
	if c.lastCmd != sh.cmd {
		sh.cmd = c.lastCmd
		c.pub.cmd.Store(c.lastCmd)
	}
	if t := c.s.clock.Load(); t != sh.active {
		sh.active = t
		c.pub.active.Store(t)
	}
	m := int32(-1)
	if c.multi != nil {
		m = int32(len(c.multi.queued))
	}
	if m != sh.multi {
		sh.multi = m
		c.pub.multi.Store(m)
	}
	if c.proto != sh.proto {
		sh.proto = c.proto
		c.pub.proto.Store(int32(c.proto))
	}
	if n := len(c.rd.buf); n != sh.rbuf {
		sh.rbuf = n
		c.pub.rbuf.Store(int64(n))
	}
	if n := cap(c.out); n != sh.obuf {
		sh.obuf = n
		c.pub.obuf.Store(int64(n))
	}
}

// setName is CLIENT SETNAME's and HELLO SETNAME's.
func (c *conn) setName(name string) {
	c.name = name
	c.pub.name.Store(&name)
}

// afterMuted follows a request run while CLIENT REPLY OFF or SKIP held,
// or that turned one on: its replies, from mark on, are dropped as Redis
// drops them, and SKIP moves on to the next request. The batch holds the
// output while the request runs, so mark stays valid.
func (c *conn) afterMuted(mark int) {
	if c.mute&(muteOff|muteSkip) != 0 && len(c.out) >= mark {
		c.out = c.out[:mark]
	}
	c.out = append(c.out, c.unmuted...)
	c.unmuted = c.unmuted[:0]
	c.mute &^= muteSkip
	if c.mute&muteSkipNext != 0 {
		c.mute = c.mute&^muteSkipNext | muteSkip
	}
}

// unmute takes what was written to c.out from at on out of the replies
// CLIENT REPLY OFF or SKIP drop, when they hold: a reply Redis pushes
// whatever they say (a SUBSCRIBE's confirmations), which afterMuted puts
// back.
func (c *conn) unmute(at int) {
	if c.mute&(muteOff|muteSkip) != 0 && len(c.out) >= at {
		c.unmuted = append(c.unmuted, c.out[at:]...)
		c.out = c.out[:at]
	}
}

// CLIENT REPLY ON|OFF|SKIP
func cmdClientReply(c *conn, args [][]byte) {
	switch {
	case is(args[2], "on"):
		c.mute &^= muteOff | muteSkip
		c.writeOK()
	case is(args[2], "off"):
		c.mute |= muteOff
	case is(args[2], "skip"):
		if c.mute&muteOff == 0 {
			c.mute |= muteSkipNext
		}
	default:
		c.writeError(errSyntax)
	}
}

// CLIENT NO-EVICT ON|OFF
//
// Accepted and shown in CLIENT LIST's flags: pgcache never evicts clients
// to free memory, so every client is in effect no-evict.
func cmdClientNoEvict(c *conn, args [][]byte) {
	switch {
	case is(args[2], "on"):
		c.pub.noEvict.Store(true)
	case is(args[2], "off"):
		c.pub.noEvict.Store(false)
	default:
		c.writeError(errSyntax)
		return
	}
	c.writeOK()
}

// CLIENT INFO
func cmdClientInfo(c *conn, _ [][]byte) {
	var b strings.Builder
	c.appendInfo(&b, c)
	c.writeVerbatim(b.String())
}

// CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id [client-id ...]]
func cmdClientList(c *conn, args [][]byte) {
	var ids []int64
	switch {
	case len(args) == 2:
	case len(args) == 4 && is(args[2], "type"):
		t, ok := clientType(args[3])
		if !ok {
			c.writeError("ERR Unknown client type '" + string(clip(args[3], len(args[3]))) + "'")
			return
		}
		if t != "normal" {
			c.writeVerbatim("") // no replicas, masters or pubsub clients
			return
		}
	case len(args) > 3 && is(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				c.writeError("ERR Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
	default:
		c.writeError(errSyntax)
		return
	}
	var b strings.Builder
	if ids != nil {
		conns := c.s.connsByID()
		for _, id := range ids {
			if other := conns[id]; other != nil {
				c.appendInfo(&b, other)
			}
		}
	} else {
		for _, other := range c.s.connList() {
			c.appendInfo(&b, other)
		}
	}
	c.writeVerbatim(b.String())
}

// clientType resolves CLIENT's TYPE argument: every pgcache client is
// normal; the other types Redis has are known and empty.
func clientType(b []byte) (string, bool) {
	for _, t := range []string{"normal", "master", "replica", "slave", "pubsub"} {
		if is(b, t) {
			return t, true
		}
	}
	return "", false
}

// appendInfo writes one CLIENT LIST line about other, as c sees it, in
// Redis 7's format. Of another connection only seen and what never changes
// are read; of c itself, its live state.
func (c *conn) appendInfo(b *strings.Builder, other *conn) {
	self := other == c
	now := c.s.clock.Load()
	var (
		cmd                         *command
		active                      int64
		multi                       int64
		proto                       int64
		qbuf, qfree, argv, multiMem int
		rbs, obl                    int
	)
	if self {
		cmd, active, proto = c.lastCmd, now, int64(c.proto)
		multi = -1
		if c.multi != nil {
			multi = int64(len(c.multi.queued))
			multiMem = c.multi.bytes
		}
		for _, a := range c.rd.args {
			argv += len(a)
		}
		qbuf = c.rd.w - c.rd.r + requestSize(c.rd.args)
		qfree = len(c.rd.buf) - c.rd.w
		rbs, obl = cap(c.out), c.pending()
	} else {
		s := &other.pub
		cmd, active, multi, proto = s.cmd.Load(), s.active.Load(), int64(s.multi.Load()), int64(s.proto.Load())
		qfree, rbs = int(s.rbuf.Load()), int(s.obuf.Load())
	}
	flags := ""
	if multi >= 0 {
		flags += "x"
	}
	if self && c.quit {
		flags += "c"
	}
	if other.pub.noEvict.Load() {
		flags += "e"
	}
	if flags == "" {
		flags = "N"
	}
	cmdName := "NULL"
	if cmd != nil {
		cmdName = cmd.name
	}
	name := ""
	if p := other.pub.name.Load(); p != nil {
		name = *p
	}
	user := auth.DefaultUser
	if p := other.pub.user.Load(); p != nil {
		user = *p
	}
	first := true
	field := func(k, v string) {
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	num := func(k string, v int64) { field(k, strconv.FormatInt(v, 10)) }
	num("id", other.id)
	field("addr", other.nc.RemoteAddr().String())
	field("laddr", other.nc.LocalAddr().String())
	num("fd", int64(connFD(other)))
	field("name", name)
	num("age", (now-other.born)/1000)
	num("idle", (now-active)/1000)
	field("flags", flags)
	num("db", 0)
	num("sub", 0)
	num("psub", 0)
	num("ssub", 0)
	num("multi", multi)
	num("qbuf", int64(qbuf))
	num("qbuf-free", int64(qfree))
	num("argv-mem", int64(argv))
	num("multi-mem", int64(multiMem))
	num("rbs", int64(rbs))
	num("rbp", int64(rbs))
	num("obl", int64(obl))
	num("oll", 0)
	num("omem", 0)
	num("tot-mem", int64(qbuf+qfree+rbs+multiMem+connOverhead))
	field("events", "r")
	field("cmd", cmdName)
	field("user", user)
	num("redir", -1)
	num("resp", proto)
	b.WriteByte('\n')
}

// connOverhead is roughly what a connection costs besides its buffers
// (the conn struct, its goroutine's stack), for tot-mem.
const connOverhead = 8 << 10

// requestSize is how many bytes args take as a multibulk request.
func requestSize(args [][]byte) int {
	if len(args) == 0 {
		return 0
	}
	n := 1 + len(strconv.Itoa(len(args))) + 2
	for _, a := range args {
		n += 1 + len(strconv.Itoa(len(a))) + 2 + len(a) + 2
	}
	return n
}

// connFD is the connection's file descriptor, -1 when it has none.
func connFD(c *conn) int {
	nc := c.nc
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = u.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if raw.Control(func(f uintptr) { fd = int(f) }) != nil {
		return -1
	}
	return fd
}

// connList is every open connection, by id.
func (s *Server) connList() []*conn {
	s.mu.Lock()
	list := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b *conn) int { return int(a.id - b.id) })
	return list
}

func (s *Server) connsByID() map[int64]*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[int64]*conn, len(s.conns))
	for c := range s.conns {
		m[c.id] = c
	}
	return m
}

// CLIENT KILL addr
// CLIENT KILL [ID id] [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [USER username]
// [ADDR addr] [LADDR laddr] [SKIPME YES|NO] ...
func cmdClientKill(c *conn, args [][]byte) {
	var (
		addr, laddr, user string
		id                int64
		typ               = ""
		skipme            = true
	)
	old := len(args) == 3
	if old {
		addr, skipme = string(args[2]), false // the old form can kill its caller
	} else {
		if len(args)%2 != 0 {
			c.writeError(errSyntax)
			return
		}
		for i := 2; i < len(args); i += 2 {
			opt, v := args[i], args[i+1]
			switch {
			case is(opt, "id"):
				n, ok := parseInt(v)
				if !ok || n < 1 {
					c.writeError("ERR client-id should be greater than 0")
					return
				}
				id = n
			case is(opt, "type"):
				t, ok := clientType(v)
				if !ok {
					c.writeError("ERR Unknown client type '" + string(clip(v, len(v))) + "'")
					return
				}
				typ = t
			case is(opt, "addr"):
				addr = string(v)
			case is(opt, "laddr"):
				laddr = string(v)
			case is(opt, "user"):
				if !c.s.userExists(string(v)) {
					c.writeError("ERR No such user '" + string(clip(v, len(v))) + "'")
					return
				}
				user = string(v)
			case is(opt, "skipme") && is(v, "yes"):
				skipme = true
			case is(opt, "skipme") && is(v, "no"):
				skipme = false
			default:
				c.writeError(errSyntax)
				return
			}
		}
	}
	killed := 0
	for _, other := range c.s.connList() {
		switch {
		case addr != "" && other.nc.RemoteAddr().String() != addr,
			laddr != "" && other.nc.LocalAddr().String() != laddr,
			typ != "" && typ != "normal",
			id != 0 && other.id != id,
			user != "" && other.userName() != user,
			other == c && skipme:
			continue
		}
		if other == c {
			c.quit = true // after this reply, as Redis closes its caller
		} else {
			c.s.kill(other)
		}
		killed++
	}
	switch {
	case !old:
		c.writeInt(int64(killed))
	case killed == 0:
		c.writeError("ERR No such client")
	default:
		c.writeOK()
	}
}

// userName is the user the connection authenticated as.
func (c *conn) userName() string {
	if p := c.pub.user.Load(); p != nil {
		return *p
	}
	return auth.DefaultUser
}

// userExists says whether CLIENT KILL USER names a user: with auth off
// only "default" exists, as in Redis.
func (s *Server) userExists(name string) bool {
	users := s.users.Load()
	if !users.RESP() {
		return name == auth.DefaultUser
	}
	return users.Has(name)
}

// kill closes another connection now. It leaves the client list and the
// connected count at once, as Redis frees a killed client before CLIENT
// KILL answers; its goroutine ends when it next touches the socket.
func (s *Server) kill(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	delete(s.byID, c.id)
	s.mu.Unlock()
	if c.gone.CompareAndSwap(false, true) {
		s.stats.ConnectedClients.Add(-1)
	}
	c.cancel()
	c.nc.Close()
}
