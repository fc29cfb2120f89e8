package proxy

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/pgcache/pgcache/internal/glob"
)

// CONFIG GET, SET, RESETSTAT, REWRITE, HELP over the parameters pgcache
// has a meaning for, by Redis's names. Each answers its true value. Those
// settable change the running server until the next reload or restart,
// which take pgcache's config file's values again (as Redis forgets a
// CONFIG SET at restart without CONFIG REWRITE); the others refuse a new
// value with the reason, and accept their own value, as Redis accepts
// setting a parameter to what it is. A parameter pgcache does not list
// gets Redis's answer for an unknown one. The parameters are the rows of
// the settings table (settings.go) that have Redis names.

// parseMemory is Redis's memtoull: digits, then b, k, kb, m, mb, g or gb
// in any case (k = 1000, kb = 1024).
func parseMemory(v string) (int64, bool) {
	i := 0
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	mul := int64(1)
	switch strings.ToLower(v[i:]) {
	case "", "b":
	case "k":
		mul = 1000
	case "kb":
		mul = 1 << 10
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1 << 20
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1 << 30
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil || n > maxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// CONFIG GET parameter [parameter ...]
//
// A name without a glob is answered as the client wrote it, as Redis
// does; each parameter comes once.
func cmdConfigGet(c *conn, args [][]byte) {
	var names, keys []string
	seen := map[string]bool{}
	add := func(name, as string) {
		if !seen[name] {
			seen[name] = true
			names, keys = append(names, name), append(keys, as)
		}
	}
	for _, a := range args[2:] {
		pat := strings.ToLower(string(a))
		if !strings.ContainsAny(pat, "*?[") {
			if params[pat] != nil {
				add(pat, string(a))
			}
			continue
		}
		g := glob.Compile(pat, true)
		for _, name := range paramNames {
			if g.Match(name) {
				add(name, name)
			}
		}
	}
	c.writeMap(len(names))
	for i, name := range names {
		c.writeBulkString(keys[i])
		c.writeBulkString(params[name].get(c.s))
	}
}

// CONFIG SET parameter value [parameter value ...]
//
// All or nothing: every parameter and value is checked before any is
// applied.
func cmdConfigSet(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.writeError(errSyntax)
		return
	}
	type change struct {
		p     *setting
		name  string
		value string
	}
	var changes []change
	failed := func(name, why string) {
		c.writeError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why)
	}
	for i := 2; i < len(args); i += 2 {
		name, value := strings.ToLower(string(args[i])), string(args[i+1])
		p := params[name]
		if p == nil {
			c.writeError("ERR Unknown option or number of arguments for CONFIG SET - '" + string(clip(args[i], len(args[i]))) + "'")
			return
		}
		if p.set == nil && p.why == immutable {
			failed(string(args[i]), immutable)
			return
		}
		for _, ch := range changes {
			if strings.EqualFold(ch.name, name) { // an alias is not a duplicate, as in Redis 7.0
				failed(string(args[i]), "duplicate parameter")
				return
			}
		}
		changes = append(changes, change{p, string(args[i]), value})
	}
	// A refused value is reported under the name the client used, alias
	// or not, in lower case: Redis 7.0 keeps an alias as a parameter of
	// its own name.
	for _, ch := range changes {
		switch {
		case ch.p.set == nil && !sameValue(ch.p.get(c.s), ch.value):
			failed(strings.ToLower(ch.name), ch.p.why)
			return
		case ch.p.set != nil:
			if why := ch.p.set.check(ch.value); why != "" {
				failed(strings.ToLower(ch.name), why)
				return
			}
		}
	}
	for _, ch := range changes {
		if ch.p.set != nil {
			ch.p.set.apply(c.s, ch.value)
		}
	}
	c.writeOK()
}

// sameValue compares a fixed parameter's value with the one asked for, as
// Redis reads values: case aside, and memory and number forms alike.
func sameValue(have, want string) bool {
	if strings.EqualFold(have, want) {
		return true
	}
	a, ok1 := parseMemory(have)
	b, ok2 := parseMemory(want)
	return ok1 && ok2 && a == b
}

// CONFIG RESETSTAT
func cmdConfigResetStat(c *conn, _ [][]byte) {
	c.s.resetStats()
	c.writeOK()
}

// CONFIG REWRITE
func cmdConfigRewrite(c *conn, _ [][]byte) {
	c.writeError("ERR CONFIG REWRITE is not supported: pgcache's configuration is its YAML config file")
}

// listenPort is the TCP port RESP listens on (the lowest, with several),
// "0" with none.
func (s *Server) listenPort() string {
	port := 0
	for _, a := range s.listenAddrs() {
		if t, ok := a.(*net.TCPAddr); ok && (port == 0 || t.Port < port) {
			port = t.Port
		}
	}
	return strconv.Itoa(port)
}

// listenHosts are the addresses RESP listens on, as Redis's bind.
func (s *Server) listenHosts() string {
	var hosts []string
	for _, a := range s.listenAddrs() {
		if t, ok := a.(*net.TCPAddr); ok {
			hosts = append(hosts, t.IP.String())
		}
	}
	slices.Sort(hosts)
	return strings.Join(hosts, " ")
}

func (s *Server) listenUnix() string {
	for _, a := range s.listenAddrs() {
		if u, ok := a.(*net.UnixAddr); ok {
			return u.Name
		}
	}
	return ""
}

func (s *Server) listenAddrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var addrs []net.Addr
	for ln := range s.listeners {
		addrs = append(addrs, ln.Addr())
	}
	return addrs
}
