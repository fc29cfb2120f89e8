package proxy

import "github.com/pgcache/pgcache/backends/coll"

// kind is what a command touches.
type kind uint8

const (
	kindRead  kind = iota // reads keys
	kindWrite             // writes keys
	kindAdmin             // the connection or the server, no key
)

type handler func(c *conn, args [][]byte)

// spec is one line of the command table.
type spec struct {
	name  string // lowercase
	fn    handler
	kind  kind
	arity int // Redis's convention: n exactly, or at least -n; the name counts
	keys  keySpec
	subs  []spec // subcommands (CLIENT SETNAME), looked up by the second argument
	// noAuth lets a client that must authenticate run the command (Redis's
	// no_auth flag: AUTH, HELLO; QUIT is always let through).
	noAuth bool
	// noQueue runs the command inside MULTI instead of queueing it (EXEC,
	// DISCARD, MULTI, WATCH, QUIT).
	noQueue bool
	// movable returns the keys of a command whose keys keySpec cannot say
	// (EVAL's numkeys), or an error reply.
	movable func(args [][]byte) ([][]byte, string)
	// noScript refuses the command from a script (MULTI, EVAL, SCRIPT...).
	noScript bool
	// inPubSub lets a RESP2 client that subscribed run the command.
	inPubSub bool
	// coll is a command on the collection of one key whose pipelined
	// requests may run together (group.go).
	coll *coll.Spec
}

// command is a spec ready to dispatch.
type command struct {
	name     string // as Redis reports it: "get", "client|setname"
	fn       handler
	kind     kind
	arity    int
	keys     keySpec
	subs     map[string]*command // nil for a command without subcommands
	subList  []*command          // subs in table order, for COMMAND
	arityErr string              // the reply to a wrong number of arguments
	noAuth   bool                // runs before AUTH
	noQueue  bool                // runs inside MULTI
	movable  func(args [][]byte) ([][]byte, string)
	noScript bool       // refused from scripts
	inPubSub bool       // runs in a RESP2 client's Pub/Sub mode
	coll     *coll.Spec // a command on the collection of one key (spec.coll)
	num      int        // its INFO commandstats in each Server's cmdStats: see cmdstats.go
}

// commands is the dispatch table: lowercase name -> command. Adding a
// command is a handler in its family's file and a line here.
var (
	commands    map[string]*command
	commandList []*command // in table order, for COMMAND
	// commandCount numbers the commands and subcommands as they are
	// registered (num), so a Server keeps their statistics in a slice.
	// Registration ends before the first Server is made.
	commandCount int
)

func init() {
	commands, commandList = newTable("", append([]spec{
		// cmd_strings.go
		{name: "get", fn: cmdGet, kind: kindRead, arity: 2, keys: oneKey},
		{name: "set", fn: cmdSet, kind: kindWrite, arity: -3, keys: oneKey},
		{name: "setex", fn: cmdSetEx, kind: kindWrite, arity: 4, keys: oneKey},
		{name: "psetex", fn: cmdPSetEx, kind: kindWrite, arity: 4, keys: oneKey},
		{name: "setnx", fn: cmdSetNX, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "getdel", fn: cmdGetDel, kind: kindWrite, arity: 2, keys: oneKey},
		{name: "getex", fn: cmdGetEx, kind: kindWrite, arity: -2, keys: oneKey},
		{name: "mget", fn: cmdMGet, kind: kindRead, arity: -2, keys: allKeys},
		{name: "mset", fn: cmdMSet, kind: kindWrite, arity: -3, keys: pairKeys},
		{name: "msetnx", fn: cmdMSetNX, kind: kindWrite, arity: -3, keys: pairKeys},
		{name: "incr", fn: cmdIncr, kind: kindWrite, arity: 2, keys: oneKey},
		{name: "incrby", fn: cmdIncrBy, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "decr", fn: cmdDecr, kind: kindWrite, arity: 2, keys: oneKey},
		{name: "decrby", fn: cmdDecrBy, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "incrbyfloat", fn: cmdIncrByFloat, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "append", fn: cmdAppend, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "setrange", fn: cmdSetRange, kind: kindWrite, arity: 4, keys: oneKey},
		{name: "getset", fn: cmdGetSet, kind: kindWrite, arity: 3, keys: oneKey},
		{name: "strlen", fn: cmdStrLen, kind: kindRead, arity: 2, keys: oneKey},
		{name: "getrange", fn: cmdGetRange, kind: kindRead, arity: 4, keys: oneKey},
		{name: "substr", fn: cmdGetRange, kind: kindRead, arity: 4, keys: oneKey},
		{name: "setbit", fn: cmdSetBit, kind: kindWrite, arity: 4, keys: oneKey},
		{name: "getbit", fn: cmdGetBit, kind: kindRead, arity: 3, keys: oneKey},
		{name: "lcs", fn: cmdLCS, kind: kindRead, arity: -3, keys: keySpec{1, 2, 1}},

		// cmd_keys.go
		{name: "del", fn: cmdDel, kind: kindWrite, arity: -2, keys: allKeys},
		{name: "unlink", fn: cmdDel, kind: kindWrite, arity: -2, keys: allKeys},
		{name: "exists", fn: cmdExists, kind: kindRead, arity: -2, keys: allKeys},
		{name: "expire", fn: cmdExpire, kind: kindWrite, arity: -3, keys: oneKey},
		{name: "pexpire", fn: cmdPExpire, kind: kindWrite, arity: -3, keys: oneKey},
		{name: "ttl", fn: cmdTTL, kind: kindRead, arity: 2, keys: oneKey},
		{name: "pttl", fn: cmdPTTL, kind: kindRead, arity: 2, keys: oneKey},
		{name: "persist", fn: cmdPersist, kind: kindWrite, arity: 2, keys: oneKey},
		{name: "expireat", fn: cmdExpireAt, kind: kindWrite, arity: -3, keys: oneKey},
		{name: "pexpireat", fn: cmdPExpireAt, kind: kindWrite, arity: -3, keys: oneKey},

		// cmd_keyspace.go
		{name: "expiretime", fn: cmdExpireTime, kind: kindRead, arity: 2, keys: oneKey},
		{name: "pexpiretime", fn: cmdPExpireTime, kind: kindRead, arity: 2, keys: oneKey},
		{name: "type", fn: collCmd(coll.ParseType), kind: kindRead, arity: 2, keys: oneKey},
		{name: "object", kind: kindRead, arity: -2, subs: []spec{
			// cmd_object.go
			{name: "encoding", fn: cmdObjectEncoding, kind: kindRead, arity: 3, keys: keySpec{2, 2, 1}},
			{name: "freq", fn: cmdObjectFreq, kind: kindRead, arity: 3, keys: keySpec{2, 2, 1}},
			{name: "idletime", fn: cmdObjectIdleTime, kind: kindRead, arity: 3, keys: keySpec{2, 2, 1}},
			{name: "refcount", fn: cmdObjectRefCount, kind: kindRead, arity: 3, keys: keySpec{2, 2, 1}},
		}},
		{name: "memory", kind: kindRead, arity: -2, subs: []spec{
			// cmd_memory.go
			{name: "usage", fn: cmdMemoryUsage, kind: kindRead, arity: -3, keys: keySpec{2, 2, 1}},
		}},
		{name: "touch", fn: cmdTouch, kind: kindRead, arity: -2, keys: allKeys},
		{name: "rename", fn: cmdRename, kind: kindWrite, arity: 3, keys: twoKeys},
		{name: "renamenx", fn: cmdRenameNX, kind: kindWrite, arity: 3, keys: twoKeys},
		{name: "copy", fn: cmdCopy, kind: kindWrite, arity: -3, keys: twoKeys},
		{name: "scan", fn: cmdScan, kind: kindRead, arity: -2},
		{name: "keys", fn: cmdKeys, kind: kindRead, arity: 2},
		{name: "randomkey", fn: cmdRandomKey, kind: kindRead, arity: 1},
		{name: "flushdb", fn: cmdFlushDB, kind: kindWrite, arity: -1},
		{name: "flushall", fn: cmdFlushAll, kind: kindWrite, arity: -1},

		// cmd_multi.go
		{name: "multi", fn: cmdMulti, kind: kindAdmin, arity: 1, noQueue: true},
		{name: "exec", fn: cmdExec, kind: kindAdmin, arity: 1, noQueue: true},
		{name: "discard", fn: cmdDiscard, kind: kindAdmin, arity: 1, noQueue: true},
		{name: "watch", fn: cmdWatch, kind: kindRead, arity: -2, keys: allKeys, noQueue: true},
		{name: "unwatch", fn: cmdUnwatch, kind: kindAdmin, arity: 1, noScript: true},

		// cmd_scripting.go
		{name: "eval", fn: cmdEval, kind: kindWrite, arity: -3, movable: scriptKeys, noScript: true},
		{name: "evalsha", fn: cmdEval, kind: kindWrite, arity: -3, movable: scriptKeys, noScript: true},
		{name: "eval_ro", fn: cmdEval, kind: kindRead, arity: -3, movable: scriptKeys, noScript: true},
		{name: "evalsha_ro", fn: cmdEval, kind: kindRead, arity: -3, movable: scriptKeys, noScript: true},
		{name: "fcall", fn: cmdFCall, kind: kindWrite, arity: -3, movable: scriptKeys, noScript: true},
		{name: "fcall_ro", fn: cmdFCall, kind: kindRead, arity: -3, movable: scriptKeys, noScript: true},
		{name: "script", fn: cmdScript, kind: kindAdmin, arity: -2, noScript: true},
		{name: "function", fn: cmdFunction, kind: kindAdmin, arity: -2, noScript: true},

		// cmd_server.go
		{name: "ping", fn: cmdPing, kind: kindAdmin, arity: -1, inPubSub: true},
		{name: "echo", fn: cmdEcho, kind: kindAdmin, arity: 2},
		{name: "hello", fn: cmdHello, kind: kindAdmin, arity: -1, noAuth: true, noScript: true},
		{name: "auth", fn: cmdAuth, kind: kindAdmin, arity: -2, noAuth: true, noScript: true},
		{name: "select", fn: cmdSelect, kind: kindAdmin, arity: 2},
		{name: "quit", fn: cmdQuit, kind: kindAdmin, arity: -1, noAuth: true, noQueue: true, inPubSub: true},
		{name: "dbsize", fn: cmdDBSize, kind: kindAdmin, arity: 1},
		{name: "client", kind: kindAdmin, arity: -2, noScript: true, subs: []spec{
			{name: "id", fn: cmdClientID, kind: kindAdmin, arity: 2},
			{name: "setname", fn: cmdClientSetName, kind: kindAdmin, arity: 3},
			{name: "getname", fn: cmdClientGetName, kind: kindAdmin, arity: 2},
			{name: "setinfo", fn: cmdClientSetInfo, kind: kindAdmin, arity: 4},
			// cmd_client.go
			{name: "list", fn: cmdClientList, kind: kindAdmin, arity: -2},
			{name: "info", fn: cmdClientInfo, kind: kindAdmin, arity: 2},
			{name: "kill", fn: cmdClientKill, kind: kindAdmin, arity: -3},
			{name: "no-evict", fn: cmdClientNoEvict, kind: kindAdmin, arity: 3},
			{name: "reply", fn: cmdClientReply, kind: kindAdmin, arity: 3},
			{name: "unblock", fn: cmdClientUnblock, kind: kindAdmin, arity: -3},
			// cmd_tracking.go
			{name: "tracking", fn: cmdClientTracking, kind: kindAdmin, arity: -3},
			{name: "caching", fn: cmdClientCaching, kind: kindAdmin, arity: 3},
			{name: "getredir", fn: cmdClientGetRedir, kind: kindAdmin, arity: 2},
			{name: "trackinginfo", fn: cmdClientTrackingInfo, kind: kindAdmin, arity: 2},
		}},
		{name: "time", fn: cmdTime, kind: kindAdmin, arity: 1},

		// cmd_tracking.go
		{name: "lastsave", fn: cmdLastSave, kind: kindAdmin, arity: 1},

		// cmd_pubsub.go
		{name: "subscribe", fn: cmdSubscribe, kind: kindAdmin, arity: -2, inPubSub: true, noScript: true},
		{name: "unsubscribe", fn: cmdUnsubscribe, kind: kindAdmin, arity: -1, inPubSub: true, noScript: true},
		{name: "psubscribe", fn: cmdPSubscribe, kind: kindAdmin, arity: -2, inPubSub: true, noScript: true},
		{name: "punsubscribe", fn: cmdPUnsubscribe, kind: kindAdmin, arity: -1, inPubSub: true, noScript: true},
		{name: "ssubscribe", fn: cmdSSubscribe, kind: kindAdmin, arity: -2, inPubSub: true, noScript: true},
		{name: "sunsubscribe", fn: cmdSUnsubscribe, kind: kindAdmin, arity: -1, inPubSub: true, noScript: true},
		{name: "publish", fn: cmdPublish, kind: kindAdmin, arity: 3},
		{name: "spublish", fn: cmdSPublish, kind: kindAdmin, arity: 3},
		{name: "pubsub", kind: kindAdmin, arity: -2, subs: []spec{
			{name: "channels", fn: cmdPubSubChannels, kind: kindAdmin, arity: -2},
			{name: "numsub", fn: cmdPubSubNumSub, kind: kindAdmin, arity: -2},
			{name: "numpat", fn: cmdPubSubNumPat, kind: kindAdmin, arity: 2},
			{name: "shardchannels", fn: cmdPubSubShardChannels, kind: kindAdmin, arity: -2},
			{name: "shardnumsub", fn: cmdPubSubShardNumSub, kind: kindAdmin, arity: -2},
		}},

		// cmd_config.go
		{name: "config", kind: kindAdmin, arity: -2, noScript: true, subs: []spec{
			{name: "get", fn: cmdConfigGet, kind: kindAdmin, arity: -3},
			{name: "set", fn: cmdConfigSet, kind: kindAdmin, arity: -4},
			{name: "resetstat", fn: cmdConfigResetStat, kind: kindAdmin, arity: 2},
			{name: "rewrite", fn: cmdConfigRewrite, kind: kindAdmin, arity: 2},
		}},

		// cmd_command.go
		{name: "command", fn: cmdCommand, kind: kindAdmin, arity: -1, subs: []spec{
			{name: "count", fn: cmdCommandCount, kind: kindAdmin, arity: 2},
			{name: "info", fn: cmdCommandInfo, kind: kindAdmin, arity: -2},
			{name: "docs", fn: cmdCommandDocs, kind: kindAdmin, arity: -2},
			{name: "list", fn: cmdCommandList, kind: kindAdmin, arity: -2},
		}},

		// cmd_info.go
		{name: "info", fn: cmdInfo, kind: kindAdmin, arity: -1},
	}, collSpecs()...))
	clientCmd = commands["client"]
}

// newTable builds a lookup table from specs; parent is the container's
// name for subcommands. A duplicate name is a programmer's error.
func newTable(parent string, specs []spec) (map[string]*command, []*command) {
	m := make(map[string]*command, len(specs))
	list := make([]*command, 0, len(specs))
	for _, s := range specs {
		list = append(list, register(m, parent, s))
	}
	return m, list
}

// register adds one command to m.
func register(m map[string]*command, parent string, s spec) *command {
	if _, dup := m[s.name]; dup || s.name == "" || len(s.name) > maxCommandName {
		panic("proxy: bad or duplicate command name " + s.name)
	}
	cmd := &command{name: s.name, fn: s.fn, kind: s.kind, arity: s.arity, keys: s.keys, noAuth: s.noAuth,
		noQueue: s.noQueue, movable: s.movable, noScript: s.noScript || s.noQueue, inPubSub: s.inPubSub,
		coll: s.coll, num: commandCount}
	commandCount++
	if parent != "" {
		cmd.name = parent + "|" + s.name
	}
	cmd.arityErr = errArity(cmd.name)
	if s.subs != nil {
		// Every container has HELP, its lines in help.txt.
		help := spec{name: "help", fn: cmdHelp, kind: kindAdmin, arity: 2}
		cmd.subs, cmd.subList = newTable(s.name, append(s.subs[:len(s.subs):len(s.subs)], help))
	}
	m[s.name] = cmd
	return cmd
}

// maxCommandName bounds command names, so lookup can fold case on the stack.
const maxCommandName = 32

// lookup finds a command by name, ignoring case, without allocating.
func lookup(m map[string]*command, name []byte) *command {
	if len(name) > maxCommandName {
		return nil
	}
	var lower [maxCommandName]byte
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return m[string(lower[:len(name)])] // the compiler does not copy for a lookup
}

// arityOK checks the number of arguments, the command's name included.
func (cmd *command) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}
