package proxy

import (
	"errors"
	"strconv"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Connection and server commands: enough for redis-cli, go-redis,
// valkey-go and redis-py to connect and set themselves up.

// redisVersion is the Redis version pgcache answers as. Clients read it to
// decide what they may send (valkey-go: RESP3 from 6, go-redis: CLIENT
// SETINFO from 7.2).
const redisVersion = "7.2.0"

// PING [message]
func cmdPing(c *conn, args [][]byte) {
	switch {
	case len(args) <= 2 && c.proto == 2 && c.subs.any(): // Redis's Pub/Sub form
		c.writeArray(2)
		c.writeBulkString("pong")
		if len(args) == 2 {
			c.writeBulk(args[1])
		} else {
			c.writeBulkString("")
		}
	case len(args) == 1:
		c.writeSimple("PONG")
	case len(args) == 2:
		c.writeBulk(args[1])
	default:
		c.writeError(errArity("ping"))
	}
}

// ECHO message
func cmdEcho(c *conn, args [][]byte) { c.writeBulk(args[1]) }

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *conn, args [][]byte) {
	var proto int64
	next := 1
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.writeError(errProtoVersion)
			return
		}
		if v < 2 || v > 3 {
			c.writeError(errNoProto)
			return
		}
		proto, next = v, 2
	}
	var user, pass, name []byte
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case is(args[j], "auth") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case is(args[j], "setname") && more >= 1:
			name = args[j+1]
			if !validClientAttr(name) {
				c.writeError(errClientName)
				return
			}
			j++
		default:
			c.writeError("ERR Syntax error in HELLO option '" + string(clip(args[j], len(args[j]))) + "'")
			return
		}
	}
	if user != nil {
		if bad := c.authenticate(user, pass); bad != "" {
			c.writeError(bad)
			return
		}
	}
	if c.mustAuth() {
		c.writeError(errHelloNoAuth)
		return
	}
	if name != nil {
		c.setName(string(name))
	}
	if proto != 0 {
		c.proto = int(proto)
		c.push.proto.Store(int32(proto))
	}
	c.writeMap(7)
	c.writeBulkString("server")
	c.writeBulkString("pgcache")
	c.writeBulkString("version")
	c.writeBulkString(redisVersion)
	c.writeBulkString("proto")
	c.writeInt(int64(c.proto))
	c.writeBulkString("id")
	c.writeInt(c.id)
	c.writeBulkString("mode")
	c.writeBulkString("standalone")
	c.writeBulkString("role")
	c.writeBulkString("master")
	c.writeBulkString("modules")
	c.writeArray(0)
}

// AUTH [username] password
func cmdAuth(c *conn, args [][]byte) {
	var user, pass []byte
	switch len(args) {
	case 2:
		// Redis refuses the one-argument form when the default user has
		// no password, to flag a client configured for another server.
		if !c.s.users.Load().RESP() {
			c.writeError(errAuthNoPassword)
			return
		}
		user, pass = defaultUser, args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		c.writeError(errSyntax)
		return
	}
	if bad := c.authenticate(user, pass); bad != "" {
		c.writeError(bad)
		return
	}
	c.writeOK()
}

// SELECT index
func cmdSelect(c *conn, args [][]byte) {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		c.writeError(errNotInteger)
	case n != 0:
		c.writeError(errDBIndex) // routes, not numbered databases, split the keys
	default:
		c.writeOK()
	}
}

// QUIT
func cmdQuit(c *conn, _ [][]byte) {
	c.writeOK()
	c.quit = true
}

// DBSIZE counts the keys of the routes RESP reaches whose backend can count
// them cheaply (backends.Sizer); the others are left out.
func cmdDBSize(c *conn, _ [][]byte) {
	var total int64
	for _, r := range c.t.Routes() {
		if len(r.Prefixes) == 0 {
			continue
		}
		s, ok := backends.As[backends.Sizer](r.Backend)
		if !ok {
			continue
		}
		n, err := s.Len(c.ctx)
		if errors.Is(err, backends.ErrUnsupported) {
			continue
		}
		if err != nil {
			c.backendErr(r, err)
			return
		}
		total += n
	}
	c.writeInt(total)
}

// CLIENT ID
func cmdClientID(c *conn, _ [][]byte) { c.writeInt(c.id) }

// CLIENT SETNAME connection-name
func cmdClientSetName(c *conn, args [][]byte) {
	if !validClientAttr(args[2]) {
		c.writeError(errClientName)
		return
	}
	c.setName(string(args[2]))
	c.writeOK()
}

// CLIENT GETNAME
func cmdClientGetName(c *conn, _ [][]byte) {
	if c.name == "" {
		c.writeNull()
		return
	}
	c.writeBulkString(c.name)
}

// CLIENT SETINFO <LIB-NAME libname | LIB-VER libver>
//
// Redis 7.2 keeps these for CLIENT LIST; pgcache only checks them, since
// go-redis and redis-py send them on every connection.
func cmdClientSetInfo(c *conn, args [][]byte) {
	attr := args[2]
	if !is(attr, "lib-name") && !is(attr, "lib-ver") {
		c.writeError("ERR Unrecognized option '" + string(clip(attr, len(attr))) + "'")
		return
	}
	if !validClientAttr(args[3]) {
		c.writeError("ERR " + string(clip(attr, len(attr))) + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.writeOK()
}

// validClientAttr is Redis's check for client names and library names:
// printable ASCII without spaces.
func validClientAttr(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// TIME
func cmdTime(c *conn, _ [][]byte) {
	now := time.Now()
	c.writeArray(2)
	c.writeBulkString(strconv.FormatInt(now.Unix(), 10))
	c.writeBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// LASTSAVE is the server's start: pgcache does not save, and a store
// without persistence reports its start as its last save (INFO's
// rdb_last_save_time).
func cmdLastSave(c *conn, _ [][]byte) { c.writeInt(c.s.started.Unix()) }
