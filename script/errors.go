package script

// Error replies in Redis 7.0's words. The proxy writes them as they are
// ("-" + text); the ones a Caller returns from redis.call are marked so.
const (
	errNoScript         = "NOSCRIPT No matching script. Please use EVAL."
	errNegativeKeys     = "ERR Number of keys can't be negative"
	errTooManyKeys      = "ERR Number of keys can't be greater than number of args"
	errNotInteger       = "ERR value is not an integer or out of range"
	errBadKeys          = "ERR Bad number of keys provided"
	errWriteFlagRO      = "ERR Can not execute a script with write flag using *_ro command."
	errNotBusy          = "NOTBUSY No scripts in execution right now."
	errUnkillable       = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errKilled           = "ERR Script killed by user with SCRIPT KILL..."
	errOutOfMemory      = "ERR not enough memory"
	errFunctionNotFound = "ERR Function not found"
	errLibraryNotFound  = "ERR Library not found"
	errScriptFlush      = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	errFunctionFlush    = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
	errBadPayload       = "ERR DUMP payload version or checksum are wrong"
	errRestorePolicy    = "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
	errInvalidShebang   = "ERR Invalid script shebang"
	errArgsType         = "ERR Lua redis lib command arguments must be strings or integers"
	errNoArgs           = "ERR Please specify at least one argument for this redis lib call"
	errLibName          = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	errSyntax           = "ERR syntax error"
)

// Texts a Caller returns from Call, as Redis answers redis.call.
const (
	// ErrUnknownCommand answers a command the server does not have.
	ErrUnknownCommand = "ERR Unknown Redis command called from script"
	// ErrWrongArity answers a command called with the wrong number of arguments.
	ErrWrongArity = "ERR Wrong number of args calling Redis command from script"
	// ErrNotAllowed answers a command scripts may not run (EVAL, MULTI,
	// blocking commands, SCRIPT, ...).
	ErrNotAllowed = "ERR This Redis command is not allowed from script"
	// ErrWriteReadOnly answers a write command in a read-only run (EVAL_RO,
	// EVALSHA_RO, FCALL_RO, a no-writes script or function).
	ErrWriteReadOnly = "ERR Write commands are not allowed from read-only scripts."
)

// Busy replies: what the proxy answers a client that needs a script's keys
// while the script is busy (Running reports Busy). Redis names the command
// that can stop the running script.
const (
	ErrBusyEval     = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	ErrBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errUnknownSubcommand(sub, cmd string) string {
	return "ERR unknown subcommand '" + sub + "'. Try " + cmd + " HELP."
}
