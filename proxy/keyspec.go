package proxy

import "github.com/pgcache/pgcache/script"

// Which arguments of a request are keys: the command table's key specs
// (commands.go), and the commands whose keys a spec cannot say. Atomic
// runs route by them (atomic.go), CLIENT TRACKING registers them
// (tracking_sources.go), a script's redis.call checks them against its
// declared keys (cmd_scripting.go), COMMAND reports them.

// keySpec says which arguments are keys, as COMMAND reports them: the
// first, the last (negative: counted from the end), and the step.
type keySpec struct{ first, last, step int }

var (
	noKeys   = keySpec{}
	oneKey   = keySpec{1, 1, 1}
	allKeys  = keySpec{1, -1, 1}
	pairKeys = keySpec{1, -1, 2} // MSET key value [key value ...]
	twoKeys  = keySpec{1, 2, 1}  // RENAME key newkey
)

// keysOf returns the keys of a request by its command's key spec.
func keysOf(cmd *command, args [][]byte) ([][]byte, string) {
	return appendKeys(nil, cmd, args)
}

// appendKeys is keysOf appending to dst, which a command with movable keys
// does not use.
func appendKeys(dst [][]byte, cmd *command, args [][]byte) ([][]byte, string) {
	if cmd.movable != nil {
		return cmd.movable(args)
	}
	ks := cmd.keys
	if ks.first == 0 {
		return dst, ""
	}
	last := ks.last
	if last < 0 {
		last += len(args)
	}
	for i := ks.first; i <= last && i < len(args); i += ks.step {
		dst = append(dst, args[i])
	}
	return dst, ""
}

// scriptKeys are the keys an EVAL or FCALL declares (its numkeys), or the
// error reply to a bad numkeys: a movable key spec.
func scriptKeys(args [][]byte) ([][]byte, string) {
	keys, bad := script.Keys(args)
	if bad.IsError() {
		return nil, string(bad.Str)
	}
	return keys, ""
}
