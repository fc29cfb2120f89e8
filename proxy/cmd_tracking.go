package proxy

import (
	"slices"
	"strings"

	"github.com/pgcache/pgcache/tracking"
)

// CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO; SUBSCRIBE and
// UNSUBSCRIBE (for __redis__:invalidate: pgcache has no PUBLISH, so other
// channels are accepted and stay silent). The checks, their order and
// their texts are Redis 7's (networking.c clientCommand).

// clientCmd is CLIENT, whose subcommands keep CLIENT CACHING's flag.
var clientCmd *command

// CLIENT TRACKING <ON | OFF> [REDIRECT client-id] [PREFIX prefix
// [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
func cmdClientTracking(c *conn, args [][]byte) {
	var (
		o        tracking.Options
		redirect int64
	)
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch a := args[j]; {
		case is(a, "redirect") && more:
			j++
			if redirect != 0 {
				c.writeError("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := parseInt(args[j])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if c.s.connByID(id) == nil {
				c.writeError("ERR The client ID you want redirect to does not exist")
				return
			}
			redirect = id
		case is(a, "bcast"):
			o.BCAST = true
		case is(a, "optin"):
			o.OptIn = true
		case is(a, "optout"):
			o.OptOut = true
		case is(a, "noloop"):
			o.NoLoop = true
		case is(a, "prefix") && more:
			j++
			o.Prefixes = append(o.Prefixes, string(args[j]))
		default:
			c.writeError(errSyntax)
			return
		}
	}
	switch {
	case is(args[2], "off"):
		c.s.tracking.Off(c.track)
		c.track, c.caching = nil, false
		c.writeOK()
		return
	case !is(args[2], "on"):
		c.writeError(errSyntax)
		return
	}
	var old *tracking.Options
	if c.track != nil {
		cur := c.track.Options()
		old = &cur
	}
	switch {
	case !o.BCAST && len(o.Prefixes) > 0:
		c.writeError("ERR PREFIX option requires BCAST mode to be enabled")
	case old != nil && old.BCAST != o.BCAST:
		c.writeError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	case o.BCAST && (o.OptIn || o.OptOut):
		c.writeError("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case o.OptIn && o.OptOut:
		c.writeError("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case old != nil && (o.OptIn && old.OptOut || o.OptOut && old.OptIn):
		c.writeError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	default:
		if o.BCAST {
			if bad := prefixCollision(old, o.Prefixes); bad != "" {
				c.writeError(bad)
				return
			}
		}
		c.push.broken.Store(false)
		c.push.redirect.Store(redirect)
		c.track = c.s.tracking.On(c, o)
		c.writeOK()
	}
}

// prefixCollision is Redis's checkPrefixCollisionsOrReply: two prefixes
// of one client may not both match a key.
func prefixCollision(old *tracking.Options, prefixes []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range prefixes {
		if old != nil {
			for _, q := range old.Prefixes {
				if overlap(q, p) {
					return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + q +
						"'. Prefixes for a single client must not overlap."
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q +
					"'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *conn, args [][]byte) {
	if c.track == nil {
		c.writeError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	o := c.track.Options()
	switch {
	case is(args[2], "yes") && !o.OptIn:
		c.writeError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	case is(args[2], "no") && !o.OptOut:
		c.writeError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	case is(args[2], "yes"), is(args[2], "no"):
		c.caching = true
		c.writeOK()
	default:
		c.writeError(errSyntax)
	}
}

// CLIENT GETREDIR
func cmdClientGetRedir(c *conn, _ [][]byte) {
	if c.track == nil {
		c.writeInt(-1)
		return
	}
	c.writeInt(c.push.redirect.Load())
}

// CLIENT TRACKINGINFO
func cmdClientTrackingInfo(c *conn, _ [][]byte) {
	flags := []string{"off"}
	var redirect int64 = -1
	var prefixes []string
	if c.track != nil {
		o := c.track.Options()
		flags = []string{"on"}
		for _, f := range []struct {
			on   bool
			flag string
		}{
			{o.BCAST, "bcast"},
			{o.OptIn, "optin"},
			{o.OptIn && c.caching, "caching-yes"},
			{o.OptOut, "optout"},
			{o.OptOut && c.caching, "caching-no"},
			{o.NoLoop, "noloop"},
			{c.push.broken.Load(), "broken_redirect"},
		} {
			if f.on {
				flags = append(flags, f.flag)
			}
		}
		redirect = c.push.redirect.Load()
		prefixes = slices.Sorted(slices.Values(o.Prefixes))
	}
	c.writeMap(3)
	c.writeBulkString("flags")
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeBulkString(f)
	}
	c.writeBulkString("redirect")
	c.writeInt(redirect)
	c.writeBulkString("prefixes")
	c.writeArray(len(prefixes))
	for _, p := range prefixes {
		c.writeBulkString(p)
	}
}

// errPubSubContext refuses a command a RESP2 client in Pub/Sub mode sent.
func errPubSubContext(cmd *command) string {
	return "ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}
