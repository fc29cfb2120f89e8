package proxy

// COMMAND and its subcommands describe the command table in Redis 7's
// format, enough for clients that look before they send (go-redis's
// cluster client, redis-cli's hints). Key specs and docs are left empty:
// the first/last/step key positions say what clients use.

// COMMAND
func cmdCommand(c *conn, _ [][]byte) {
	c.writeArray(len(commandList))
	for _, cmd := range commandList {
		c.writeCommandInfo(cmd)
	}
}

// COMMAND COUNT
func cmdCommandCount(c *conn, _ [][]byte) { c.writeInt(int64(len(commandList))) }

// COMMAND INFO [command-name [command-name ...]]
func cmdCommandInfo(c *conn, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.writeArray(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := lookup(commands, name); cmd != nil {
			c.writeCommandInfo(cmd)
		} else {
			c.writeNull()
		}
	}
}

// COMMAND DOCS [command-name [command-name ...]]
//
// Answered with no docs at all, which redis-cli (which asks at start)
// takes as "no hints".
func cmdCommandDocs(c *conn, _ [][]byte) { c.writeMap(0) }

// COMMAND LIST
func cmdCommandList(c *conn, args [][]byte) {
	if len(args) > 2 {
		c.writeError(errSyntax) // no FILTERBY: every command is in one module, pgcache
		return
	}
	c.writeArray(len(commandList))
	for _, cmd := range commandList {
		c.writeBulkString(cmd.name)
	}
}

// writeCommandInfo writes one command's entry: name, arity, flags, first
// key, last key, key step, ACL categories, tips, key specs, subcommands.
func (c *conn) writeCommandInfo(cmd *command) {
	c.writeArray(10)
	c.writeBulkString(cmd.name)
	c.writeInt(int64(cmd.arity))
	flags, categories := kindFlags[cmd.kind], kindCategories[cmd.kind]
	c.writeSet(len(flags))
	for _, f := range flags {
		c.writeSimple(f)
	}
	c.writeInt(int64(cmd.keys.first))
	c.writeInt(int64(cmd.keys.last))
	c.writeInt(int64(cmd.keys.step))
	c.writeSet(len(categories))
	for _, cat := range categories {
		c.writeSimple(cat)
	}
	c.writeSet(0) // tips
	c.writeSet(0) // key specs
	if len(cmd.subList) == 0 {
		c.writeSet(0) // as Redis: an empty set, but an array when there are some
		return
	}
	c.writeArray(len(cmd.subList))
	for _, sub := range cmd.subList {
		c.writeCommandInfo(sub)
	}
}

// The COMMAND flags and ACL categories of each kind of command.
var (
	kindFlags = [...][]string{
		kindRead:  {"readonly", "fast"},
		kindWrite: {"write"},
		kindAdmin: {"loading", "stale", "fast"},
	}
	kindCategories = [...][]string{
		kindRead:  {"@read"},
		kindWrite: {"@write"},
		kindAdmin: {"@connection"},
	}
)
