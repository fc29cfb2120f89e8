package proxy

import (
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/glob"
)

// CONFIG GET, SET, RESETSTAT, REWRITE, HELP over the parameters pgcache
// has a meaning for, by Redis's names. Each answers its true value. Those
// settable change the running server until the next reload or restart,
// which take pgcache's config file's values again (as Redis forgets a
// CONFIG SET at restart without CONFIG REWRITE); the others refuse a new
// value with the reason, and accept their own value, as Redis accepts
// setting a parameter to what it is. A parameter pgcache does not list
// gets Redis's answer for an unknown one.

// param is one CONFIG parameter.
type param struct {
	name string
	get  func(s *Server) string
	// set applies a value and returns Redis's reason for refusing it ("" when
	// applied). nil: fixed, see why.
	set func(s *Server, v string) string
	// check validates a value before anything is applied, so a CONFIG SET
	// of several parameters applies all or none.
	check func(v string) string
	why   string // why a fixed parameter cannot change
}

// Why fixed parameters are fixed.
const (
	fromFile  = "pgcache takes this from its config file, not CONFIG SET"
	noFeature = "pgcache has no such feature"
	immutable = "can't set immutable config" // Redis's own text
)

// params maps each name, aliases included, to its parameter; paramNames
// lists the names in table order.
var (
	params     map[string]*param
	paramNames []string
)

func init() {
	fixed := func(name, value, why string) *param {
		return &param{name: name, get: func(*Server) string { return value }, why: why}
	}
	busy := &param{
		name: "busy-reply-threshold",
		get: func(*Server) string {
			return strconv.FormatInt(time.Duration(backends.BusyThreshold.Load()).Milliseconds(), 10)
		},
		check: intRange(0, maxInt64),
		set: func(s *Server, v string) string {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.setBusyThreshold(time.Duration(min(n, maxInt64/int64(time.Millisecond))) * time.Millisecond)
			return ""
		},
	}
	replicaof := fixed("replicaof", "", noFeature)
	table := []struct {
		name string
		p    *param
	}{
		{"busy-reply-threshold", busy},
		{"lua-time-limit", busy},
		{"maxclients", &param{
			get:   func(s *Server) string { return strconv.Itoa(s.config().MaxClients) },
			check: intRange(1, 1<<32-1),
			set: configSet(func(cfg *Config, n int64) {
				cfg.MaxClients = int(n)
			}),
		}},
		{"timeout", &param{
			get:   func(s *Server) string { return strconv.FormatInt(int64(s.config().IdleTimeout/time.Second), 10) },
			check: intRange(0, 1<<31-1),
			set:   configSet(func(cfg *Config, n int64) { cfg.IdleTimeout = time.Duration(n) * time.Second }),
		}},
		{"tracking-table-max-keys", &param{
			get:   func(s *Server) string { return strconv.Itoa(s.tracking.MaxKeys()) },
			check: intRange(0, maxInt64),
			set: func(s *Server, v string) string {
				n, _ := strconv.ParseInt(v, 10, 64)
				s.tracking.SetMaxKeys(int(min(n, math.MaxInt32)))
				return ""
			},
		}},
		{"proto-max-bulk-len", &param{
			get:   func(s *Server) string { return strconv.FormatInt(s.config().MaxBulkBytes, 10) },
			check: memRange(1<<20, maxInt64),
			set:   configSetMem(func(cfg *Config, n int64) { cfg.MaxBulkBytes = n }),
		}},
		{"client-query-buffer-limit", &param{
			get:   func(s *Server) string { return strconv.FormatInt(s.config().MaxQueryBytes, 10) },
			check: memRange(1<<20, maxInt64),
			set:   configSetMem(func(cfg *Config, n int64) { cfg.MaxQueryBytes = n }),
		}},
		{"client-output-buffer-limit", &param{
			get: func(s *Server) string {
				return "normal " + strconv.FormatInt(s.config().OutputBufferLimit, 10) + " 0 0 slave 0 0 0 pubsub 0 0 0"
			},
			why: fromFile,
		}},
		{"port", &param{get: func(s *Server) string { return s.listenPort() }, why: fromFile}},
		{"bind", &param{get: func(s *Server) string { return s.listenHosts() }, why: fromFile}},
		{"unixsocket", &param{get: func(s *Server) string { return s.listenUnix() }, why: fromFile}},
		// pgcache keeps only a digest of passwords (internal/auth): it
		// cannot answer the value as Redis does.
		{"requirepass", &param{get: func(s *Server) string {
			if s.users.Load().RESP() {
				return "(redacted)"
			}
			return ""
		}, why: fromFile}},
		{"maxmemory", &param{
			get: func(s *Server) string { return strconv.FormatInt(s.maxMemory(), 10) },
			why: fromFile,
		}},
		// The memory backend evicts by W-TinyLFU, over all keys.
		{"maxmemory-policy", fixed("maxmemory-policy", "allkeys-lfu", fromFile)},
		{"maxmemory-clients", fixed("maxmemory-clients", "0", noFeature)},
		{"databases", fixed("databases", "1", immutable)},
		{"daemonize", fixed("daemonize", "no", immutable)},
		{"cluster-enabled", fixed("cluster-enabled", "no", immutable)},
		{"protected-mode", fixed("protected-mode", "no", noFeature)},
		{"save", fixed("save", "", noFeature)},
		{"appendonly", fixed("appendonly", "no", noFeature)},
		{"replicaof", replicaof},
		{"slaveof", replicaof},
		{"notify-keyspace-events", fixed("notify-keyspace-events", "", noFeature)},
		{"dir", &param{get: func(*Server) string {
			d, _ := os.Getwd()
			return d
		}, why: noFeature}},
	}
	params = make(map[string]*param, len(table))
	for _, e := range table {
		if e.p.name == "" {
			e.p.name = e.name
		}
		if _, dup := params[e.name]; dup {
			panic("proxy: duplicate CONFIG parameter " + e.name)
		}
		params[e.name] = e.p
		paramNames = append(paramNames, e.name)
	}
}

const maxInt64 = 1<<63 - 1

// intRange checks an integer parameter as Redis does.
func intRange(lo, hi int64) func(string) string {
	return func(v string) string {
		n, ok := parseInt([]byte(v))
		if !ok {
			return "argument couldn't be parsed into an integer"
		}
		if n < lo || n > hi {
			return "argument must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive"
		}
		return ""
	}
}

// memRange checks a memory parameter ("1mb", "512m", "1048576").
func memRange(lo, hi int64) func(string) string {
	return func(v string) string {
		n, ok := parseMemory(v)
		if !ok {
			return "argument must be a memory value"
		}
		if n < lo || n > hi {
			return "argument must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive"
		}
		return ""
	}
}

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

// configSet returns a setter of an integer field of the server's Config.
func configSet(apply func(cfg *Config, n int64)) func(*Server, string) string {
	return func(s *Server, v string) string {
		n, _ := parseInt([]byte(v))
		cfg := *s.config()
		apply(&cfg, n)
		s.SetConfig(cfg)
		return ""
	}
}

func configSetMem(apply func(cfg *Config, n int64)) func(*Server, string) string {
	return func(s *Server, v string) string {
		n, _ := parseMemory(v)
		cfg := *s.config()
		apply(&cfg, n)
		s.SetConfig(cfg)
		return ""
	}
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
		p     *param
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
	for _, ch := range changes {
		switch {
		case ch.p.set == nil && !sameValue(ch.p.get(c.s), ch.value):
			failed(ch.p.name, ch.p.why)
			return
		case ch.p.check != nil:
			if why := ch.p.check(ch.value); why != "" {
				failed(ch.p.name, why)
				return
			}
		}
	}
	for _, ch := range changes {
		if ch.p.set != nil {
			ch.p.set(c.s, ch.value)
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

// CONFIG HELP
func cmdConfigHelp(c *conn, _ [][]byte) {
	writeHelp(c, "CONFIG", []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	})
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
