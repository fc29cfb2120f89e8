package script

import "strings"

// noScript are the commands and subcommands Redis 7.0 flags NOSCRIPT:
// redis.call answers ErrNotAllowed for them. The proxy asks NoScript for
// the ones its table does not have (a script calling BLPOP on pgcache is
// refused as Redis refuses it, not answered "unknown command") and for the
// ones it does, so a command added later is refused in scripts as in Redis.
var noScript = func() map[string]noScriptFlags {
	m := map[string]noScriptFlags{}
	for _, name := range strings.Fields(`
		acl|cat acl|deluser acl|dryrun acl|genpass acl|getuser acl|list acl|load acl|log
		acl|save acl|setuser acl|users acl|whoami auth bgrewriteaof bgsave
		blmove blpop brpop brpoplpush bzpopmax bzpopmin
		client|caching client|getname client|getredir client|id client|info client|kill
		client|list client|no-evict client|pause client|reply client|setname
		client|tracking client|trackinginfo client|unblock client|unpause
		cluster|reset config|get config|resetstat config|rewrite config|set
		debug discard eval eval_ro evalsha evalsha_ro exec failover fcall fcall_ro
		function|delete function|dump function|flush function|kill function|list
		function|load function|restore function|stats hello
		latency|doctor latency|graph latency|histogram latency|history latency|latest
		latency|reset module|list module|load module|loadex module|unload monitor multi
		psubscribe psync punsubscribe quit replconf replicaof reset role save
		script|debug script|exists script|flush script|kill script|load
		shutdown slaveof ssubscribe subscribe sunsubscribe sync unsubscribe unwatch
		wait watch`) {
		m[name] |= refused
		if parent, _, ok := strings.Cut(name, "|"); ok {
			m[parent] |= hasRefusedSubs
		}
	}
	return m
}()

type noScriptFlags uint8

const (
	refused        noScriptFlags = 1 << iota // the command or subcommand
	hasRefusedSubs                           // some of the command's subcommands
)

// NoScript tells whether Redis 7.0 refuses the command args (name first,
// any case) in scripts with ErrNotAllowed. It runs for every command a
// script calls, so it folds case on the stack.
func NoScript(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	var buf [32]byte
	name := appendLower(buf[:0], args[0])
	f := noScript[string(name)]
	if f&refused != 0 || f&hasRefusedSubs == 0 || len(args) < 2 {
		return f&refused != 0
	}
	name = appendLower(append(name, '|'), args[1])
	return noScript[string(name)]&refused != 0
}

// appendLower appends b to dst with ASCII letters lowercase.
func appendLower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
