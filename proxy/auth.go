package proxy

import (
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/auth"
)

// defaultUser is the user `AUTH <password>` names.
var defaultUser = []byte(auth.DefaultUser)

// SetUsers replaces the credentials clients authenticate with; nil turns
// auth off. Clients already authenticated stay so, as in Redis when
// requirepass changes; the next AUTH is checked against users.
func (s *Server) SetUsers(users *auth.Users) { s.users.Store(users) }

// authenticate checks AUTH's or HELLO's username and password and returns
// the error reply, "" when the client is now authenticated. A failed
// attempt leaves an authenticated client authenticated, as Redis does.
//
// With auth off Redis has one user, "default", with no password: it takes
// any password and there is no other user.
func (c *conn) authenticate(user, pass []byte) string {
	users := c.s.users.Load()
	if !users.RESP() {
		if string(user) == auth.DefaultUser {
			return ""
		}
		return errWrongPass
	}
	if !users.Check(user, pass) {
		c.s.stats.AuthFailures.Add(1)
		// The name is logged, never the password: enough to spot a
		// misconfigured client or someone guessing.
		c.s.log.Debug("AUTH failed", zap.Int64("client", c.id), zap.ByteString("user", clip(user, maxQuotedArgLength)))
		return errWrongPass
	}
	c.authed = true
	name := string(user)
	c.pub.user.Store(&name)
	c.rd.unauth = false // the rest of this batch may send large requests
	return ""
}
