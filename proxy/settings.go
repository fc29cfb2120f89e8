package proxy

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/conf"
)

// The settings table: each of pgcache's settings once, with what a reload
// may do with it (the server's allow-list, server/settings.go) and, for the
// ones CONFIG GET and SET serve, their Redis names and how they are read
// and applied (cmd_config.go). A setting is a key of the config file (its
// path in conf.Config), a CONFIG parameter, or both. CONFIG SET of a key of
// the file lasts until the next reload or restart, which take the file's
// value again; of a parameter only, until restart.
//
// Adding a CONFIG parameter is one row here, plus the code that uses its
// value; adding a key to conf.Config is one row too, or the server's
// TestEverySettingIsDeclared fails: no setting starts reloading, or being
// refused, by accident.

// setting is one row of the table.
type setting struct {
	// paths are the setting's keys in the config file, koanf keys joined
	// by dots: one for a setting CONFIG serves too, several for keys a
	// reload treats alike, none for a CONFIG parameter only.
	paths []string
	// reload says whether a reload may change the settings at paths.
	reload Reload
	// names are the CONFIG parameter's names, aliases after the first;
	// none when CONFIG does not serve the setting.
	names []string
	// get reads the parameter's value as CONFIG GET answers it.
	get func(s *Server) string
	// set takes a new value from CONFIG SET. nil: CONFIG SET accepts the
	// value the parameter has, as Redis does, and refuses another for why.
	set *setter
	why string
}

// Reload is what a reload does with a change of one setting.
type Reload struct {
	// Live: the new value is taken at the swap. Otherwise a reload that
	// changes the setting is refused: restart pgcache to change it.
	Live bool
	// Moot, for a setting that needs a restart, says when a change of it
	// does not matter (nil: it always does).
	Moot func(old, cfg *conf.Config) bool
}

var (
	reloads = Reload{Live: true}
	restart = Reload{}
)

// setter is how CONFIG SET takes a parameter's new value.
type setter struct {
	// check returns Redis's reason to refuse v, "" to take it. Every
	// parameter of a CONFIG SET is checked before any is applied, so that
	// it applies all or none.
	check func(v string) string
	// apply takes v, which check passed.
	apply func(s *Server, v string)
}

// Why a CONFIG parameter cannot change.
const (
	fromFile  = "pgcache takes this from its config file, not CONFIG SET"
	noFeature = "pgcache has no such feature"
	immutable = "can't set immutable config" // Redis's own text
)

var settings = []setting{
	// Listeners are opened once and stay open across reloads. CONFIG
	// answers the addresses they listen on.
	{paths: []string{"listen.resp"}, reload: restart, names: []string{"port"}, get: (*Server).listenPort, why: fromFile},
	{names: []string{"bind"}, get: (*Server).listenHosts, why: fromFile}, // listen.resp's hosts
	{paths: []string{"listen.http", "listen.admin"}, reload: restart},
	{paths: []string{"listen.resp_unix"}, reload: restart, names: []string{"unixsocket"}, get: (*Server).listenUnix, why: fromFile},
	{paths: []string{"listen.resp_unix_mode"}, reload: Reload{Moot: func(_, cfg *conf.Config) bool {
		return cfg.Listen.RESPUnix == "" // no socket: no mode to keep
	}}},
	// The logger is built once, before anything else.
	{paths: []string{"log.level", "log.format"}, reload: restart},
	// Read at the swap, and again at shutdown.
	{paths: []string{"shutdown_timeout"}, reload: reloads},
	// The RESP front takes a new Config at the swap (SetConfig).
	{paths: []string{"resp.max_clients"}, reload: reloads, names: []string{"maxclients"},
		get: func(s *Server) string { return strconv.Itoa(s.config().MaxClients) },
		set: integers(1, 1<<32-1).setter(inConfig(func(c *Config, n int64) { c.MaxClients = int(n) }))},
	{paths: []string{"resp.max_bulk_bytes"}, reload: reloads, names: []string{"proto-max-bulk-len"},
		get: func(s *Server) string { return strconv.FormatInt(s.config().MaxBulkBytes, 10) },
		set: sizes(1<<20, maxInt64).setter(inConfig(func(c *Config, n int64) { c.MaxBulkBytes = n }))},
	{paths: []string{"resp.max_inline_bytes", "resp.max_multibulk_len"}, reload: reloads},
	{paths: []string{"resp.max_query_bytes"}, reload: reloads, names: []string{"client-query-buffer-limit"},
		get: func(s *Server) string { return strconv.FormatInt(s.config().MaxQueryBytes, 10) },
		set: sizes(1<<20, maxInt64).setter(inConfig(func(c *Config, n int64) { c.MaxQueryBytes = n }))},
	{paths: []string{"resp.output_buffer_limit"}, reload: reloads, names: []string{"client-output-buffer-limit"},
		get: (*Server).outputLimits, set: &setter{check: checkOutputLimits, apply: (*Server).setOutputLimits}},
	{paths: []string{"resp.idle_timeout"}, reload: reloads, names: []string{"timeout"},
		get: func(s *Server) string { return strconv.FormatInt(int64(s.config().IdleTimeout/time.Second), 10) },
		set: integers(0, 1<<31-1).setter(inConfig(func(c *Config, n int64) { c.IdleTimeout = time.Duration(n) * time.Second }))},
	{paths: []string{"resp.write_timeout"}, reload: reloads},
	// fasthttp reads its limits while it serves: they cannot change under it.
	{paths: []string{"http.max_body_bytes", "http.read_timeout", "http.write_timeout", "http.idle_timeout",
		"http.max_conns", "http.max_header_bytes"}, reload: restart},
	// What a reload is for: built anew next to the running ones
	// (server/build.go). maxmemory is the backends' max_bytes, summed; the
	// memory backend evicts by W-TinyLFU, over all keys.
	{paths: []string{"backends", "routes"}, reload: reloads},
	{names: []string{"maxmemory"}, get: func(s *Server) string { return strconv.FormatInt(s.maxMemory(), 10) }, why: fromFile},
	{names: []string{"maxmemory-policy"}, get: always("allkeys-lfu"), why: fromFile},
	// Credentials are swapped at the swap. pgcache keeps only a digest of
	// passwords (internal/auth): it cannot answer the value as Redis does.
	{paths: []string{"auth.requirepass"}, reload: reloads, names: []string{"requirepass"}, get: (*Server).requirePass, why: fromFile},
	{paths: []string{"auth.users", "auth.http_token"}, reload: reloads},
	// A listener is TLS or not for its life; the certificate behind it is
	// read again on every reload, which is how it is renewed.
	{paths: []string{"tls.cert_file"}, reload: Reload{Moot: func(old, cfg *conf.Config) bool {
		return old.TLS.On() == cfg.TLS.On()
	}}},
	{paths: []string{"tls.key_file", "tls.client_ca_file"}, reload: reloads},
	{paths: []string{"tls.fronts"}, reload: restart},
	{paths: []string{"insecure"}, reload: reloads},
	// The transport between instances is made at start (server.New).
	{paths: []string{"pubsub.backend", "pubsub.prefix"}, reload: restart},

	// CONFIG parameters of the running server only: a reload keeps them.
	{names: []string{"busy-reply-threshold", "lua-time-limit"},
		get: func(s *Server) string { return strconv.FormatInt(s.busy.Load().Milliseconds(), 10) },
		set: integers(0, maxInt64).setter(func(s *Server, n int64) {
			s.setBusyThreshold(time.Duration(min(n, maxInt64/int64(time.Millisecond))) * time.Millisecond)
		})},
	{names: []string{"tracking-table-max-keys"},
		get: func(s *Server) string { return strconv.Itoa(s.tracking.MaxKeys()) },
		set: integers(0, maxInt64).setter(func(s *Server, n int64) { s.tracking.SetMaxKeys(int(min(n, math.MaxInt32))) })},
	// Redis's encoding thresholds, which OBJECT ENCODING reports
	// collections by (coll.Limits): the server's, every route's stores
	// read them (backends.Env). The list ones change nothing else here: a
	// list is a quicklist whatever its nodes' sizes.
	encLimit(func(l *coll.Limits) *int64 { return &l.HashMaxListpackEntries }, integers(0, maxInt64), "hash-max-listpack-entries", "hash-max-ziplist-entries"),
	encLimit(func(l *coll.Limits) *int64 { return &l.HashMaxListpackValue }, sizes(0, maxInt64), "hash-max-listpack-value", "hash-max-ziplist-value"),
	encLimit(func(l *coll.Limits) *int64 { return &l.SetMaxIntsetEntries }, integers(0, maxInt64), "set-max-intset-entries"),
	encLimit(func(l *coll.Limits) *int64 { return &l.ZSetMaxListpackEntries }, integers(0, maxInt64), "zset-max-listpack-entries", "zset-max-ziplist-entries"),
	encLimit(func(l *coll.Limits) *int64 { return &l.ZSetMaxListpackValue }, sizes(0, maxInt64), "zset-max-listpack-value", "zset-max-ziplist-value"),
	encLimit(func(l *coll.Limits) *int64 { return &l.ListMaxListpackSize }, integers(math.MinInt32, math.MaxInt32), "list-max-listpack-size", "list-max-ziplist-size"),
	encLimit(func(l *coll.Limits) *int64 { return &l.ListCompressDepth }, integers(0, math.MaxInt32), "list-compress-depth"),

	// Redis's parameters for what pgcache has not, or has one way only.
	{names: []string{"maxmemory-clients"}, get: always("0"), why: noFeature},
	{names: []string{"databases"}, get: always("1"), why: immutable},
	{names: []string{"daemonize"}, get: always("no"), why: immutable},
	{names: []string{"cluster-enabled"}, get: always("no"), why: immutable},
	{names: []string{"protected-mode"}, get: always("no"), why: noFeature},
	{names: []string{"save"}, get: always(""), why: noFeature},
	{names: []string{"appendonly"}, get: always("no"), why: noFeature},
	{names: []string{"replicaof", "slaveof"}, get: always(""), why: noFeature},
	{names: []string{"notify-keyspace-events"}, get: func(s *Server) string { return formatNotifyFlags(s.notify.Load()) },
		set: &setter{
			check: func(v string) string {
				if _, ok := parseNotifyFlags(v); !ok {
					return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
				}
				return ""
			},
			apply: func(s *Server, v string) { f, _ := parseNotifyFlags(v); s.setNotify(f) },
		}},
	{names: []string{"dir"}, get: workingDir, why: noFeature},
}

// params maps each CONFIG name, aliases included, to its setting;
// paramNames lists the names in table order. byPath maps each config path
// to its setting.
var (
	params     = map[string]*setting{}
	paramNames []string
	byPath     = map[string]*setting{}
)

func init() {
	for i := range settings {
		st := &settings[i]
		if len(st.paths) > 1 && st.names != nil {
			panic("proxy: CONFIG parameter " + st.names[0] + " has several config paths")
		}
		for _, path := range st.paths {
			if _, dup := byPath[path]; dup {
				panic("proxy: setting " + path + " declared twice")
			}
			byPath[path] = st
		}
		for _, name := range st.names {
			if _, dup := params[name]; dup {
				panic("proxy: duplicate CONFIG parameter " + name)
			}
			params[name] = st
			paramNames = append(paramNames, name)
		}
	}
}

// ReloadOf is what a reload does with a change of the setting at path (a
// key of conf.Config, as "resp.max_clients"); ok is false for a path the
// table does not declare, which a reload should refuse to change.
func ReloadOf(path string) (r Reload, ok bool) {
	st, ok := byPath[path]
	if !ok {
		return Reload{}, false
	}
	return st.reload, true
}

// SettingPaths lists the config paths the table declares.
func SettingPaths() []string {
	paths := make([]string, 0, len(byPath))
	for _, st := range settings {
		paths = append(paths, st.paths...)
	}
	return paths
}

// encLimit is a CONFIG parameter of the server's encoding thresholds
// (coll.Limits): field picks the threshold, in bounds its values.
func encLimit(field func(*coll.Limits) *int64, in bounds, names ...string) setting {
	return setting{names: names,
		get: func(s *Server) string { return strconv.FormatInt(*field(s.enc.Load()), 10) },
		set: in.setter(func(s *Server, n int64) { s.enc.Update(func(l *coll.Limits) { *field(l) = n }) }),
	}
}

// always is the getter of a parameter whose value never changes.
func always(v string) func(*Server) string { return func(*Server) string { return v } }

func workingDir(*Server) string {
	d, _ := os.Getwd()
	return d
}

func (s *Server) requirePass() string {
	if s.users.Load().RESP() {
		return "(redacted)"
	}
	return ""
}

const maxInt64 = 1<<63 - 1

// bounds is what CONFIG SET takes for a number: its form, an integer or
// a memory value ("1mb", "512m", "1048576"), and its range, checked as
// Redis does.
type bounds struct {
	parse    func(v string) (int64, bool)
	notValid string // Redis's refusal of a value of another form
	lo, hi   int64
}

func integers(lo, hi int64) bounds {
	return bounds{func(v string) (int64, bool) { return parseInt([]byte(v)) }, "argument couldn't be parsed into an integer", lo, hi}
}

func sizes(lo, hi int64) bounds {
	return bounds{parseMemory, "argument must be a memory value", lo, hi}
}

// setter takes a value within b and gives it to apply.
func (b bounds) setter(apply func(s *Server, n int64)) *setter {
	return &setter{
		check: func(v string) string {
			n, ok := b.parse(v)
			switch {
			case !ok:
				return b.notValid
			case n < b.lo || n > b.hi:
				return "argument must be between " + strconv.FormatInt(b.lo, 10) + " and " + strconv.FormatInt(b.hi, 10) + " inclusive"
			}
			return ""
		},
		apply: func(s *Server, v string) {
			n, _ := b.parse(v)
			apply(s, n)
		},
	}
}

// inConfig applies a value to a field of the server's Config.
func inConfig(field func(c *Config, n int64)) func(*Server, int64) {
	return func(s *Server, n int64) {
		cfg := *s.config()
		field(&cfg, n)
		s.SetConfig(cfg)
	}
}

// outputLimits is client-output-buffer-limit as Redis answers it: the
// normal class's hard limit is resp.output_buffer_limit; pubsub's are the
// server's (pubLimit).
func (s *Server) outputLimits() string {
	p := s.pubLimit.Load()
	return "normal " + strconv.FormatInt(s.config().OutputBufferLimit, 10) + " 0 0 slave 0 0 0 pubsub " +
		strconv.FormatInt(p.hard, 10) + " " + strconv.FormatInt(p.soft, 10) + " " +
		strconv.FormatInt(int64(p.softFor/time.Second), 10)
}

// parseOutputLimits reads client-output-buffer-limit: a class (normal,
// replica or slave, pubsub) then its hard limit, soft limit and soft
// seconds, for one class or more. Only pubsub's are taken: the normal
// class's is resp.output_buffer_limit, from the config file, and there
// are no replicas.
func parseOutputLimits(v string) (pub *pubLimit, bad string) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return nil, "Wrong number of arguments in buffer limit configuration."
	}
	for i := 0; i < len(f); i += 4 {
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, ok3 := parseInt([]byte(f[i+3]))
		if !ok1 || !ok2 || !ok3 || hard < 0 || soft < 0 || secs < 0 {
			return nil, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		switch strings.ToLower(f[i]) {
		case "pubsub":
			pub = &pubLimit{hard: hard, soft: soft, softFor: time.Duration(secs) * time.Second}
		case "normal", "replica", "slave":
		default:
			return nil, "Invalid client class specified in buffer limit configuration."
		}
	}
	return pub, ""
}

func checkOutputLimits(v string) string {
	_, bad := parseOutputLimits(v)
	return bad
}

func (s *Server) setOutputLimits(v string) {
	if pub, bad := parseOutputLimits(v); bad == "" && pub != nil {
		s.pubLimit.Store(pub)
	}
}
