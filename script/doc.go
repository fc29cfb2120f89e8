// Package script is pgcache's Redis scripting engine: EVAL, EVALSHA,
// EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION and FCALL with Redis 7's Lua 5.1
// semantics, on github.com/yuin/gopher-lua. It is a leaf: the RESP front
// (proxy) wires it in.
//
// # API
//
//   - Value, ParseReply(b) (Value, n, err), AppendReply(dst, v, proto): the
//     reply model. A Caller runs a command's handler into a scratch buffer
//     in protocol run.Resp() and ParseReply's it (the Value shares the
//     buffer: the engine converts it before the next call); the proxy
//     writes the engine's answers with AppendReply in the client's protocol.
//   - Caller.Call(run *Run, args) Value runs one command for redis.call /
//     redis.pcall. It refuses with ErrUnknownCommand, ErrWrongArity,
//     ErrNotAllowed, ErrWriteReadOnly (when run.ReadOnly and the command
//     writes) and its own text for undeclared keys (run.Keys), and calls
//     run.MarkWrite() after a write. The engine raises error Values for
//     redis.call and returns them as {err=} tables for redis.pcall.
//   - New(Options) *Engine; Engine.Eval(c, argv) for EVAL/EVALSHA/_RO,
//     Engine.FCall(c, argv) for FCALL/FCALL_RO, Engine.Script(argv) for
//     SCRIPT LOAD/EXISTS/FLUSH/KILL/HELP, Engine.Function(argv) for
//     FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS/KILL/HELP; argv is
//     the whole command. Keys(argv) gives the keys an EVAL*/FCALL* declares
//     (for locking before the run) or the error the command would give.
//   - Engine.Running() []RunInfo (name, kind, command, keys, start, wrote,
//     busy) for -BUSY (ErrBusyEval / ErrBusyFunction) and Engine.Kill.
//   - SetBusyThreshold (busy-reply-threshold / lua-time-limit),
//     SetMemoryLimit, SetLogger (redis.log and the slow-script warning):
//     safe at any time.
//
// # Runs
//
// Each run takes a Lua state from a pool (a fresh state with Redis's
// environment costs about 170 µs; a cached EVALSHA of redis-py's lock
// script about 10 µs on the development machine, see bench_test.go). Runs
// on different goroutines proceed in parallel; locking by keys is the
// caller's. A script's body is compiled once per SHA1 and instantiated once
// per Lua state (vm.closure); a run reuses its state's Run record, stop
// context and KEYS/ARGV tables (argtables.go), so that a cached EVALSHA
// allocates little more than its strings and commands. A function library
// is compiled once and run once in each Lua state that calls one of its
// functions (so state kept in a library's upvalues is per Lua state, not
// per process: Redis functions are not meant to keep state). Libraries and
// scripts live for the process.
//
// # Limits
//
// Time: past the busy threshold a run is Busy; SCRIPT KILL / FUNCTION KILL
// stop busy runs of their kind that have not written, through gopher-lua's
// context check before every instruction (pcall cannot swallow it), with
// Redis's texts (NOTBUSY, UNKILLABLE, BUSY, "Script killed by user with
// SCRIPT KILL..."). Memory: see watchdog.go — the run is stopped with
// "ERR not enough memory" when the live heap grew by more than the limit
// since it began; stacks are bounded by the call depth (200) and the data
// stack (1M slots).
//
// # Differences from Redis 7.0 known and accepted
//
//   - Compile errors are gopher-lua's parser's wording and line.
//   - tostring and ".." format numbers as Go does (1e15 -> "1e+15" is the
//     same, 1/3 gives 16 digits instead of Lua's 14); arguments to
//     redis.call use Redis's "%.17g" exactly.
//   - cjson's configuration functions (encode_max_depth, ...) hold for the
//     run that calls them; in Redis they stay in the Lua state for later
//     scripts. cjson, cmsgpack, bit and struct are implemented here in Go.
//   - math.random draws from one lrand48 for the process, as in Redis 7.0
//     (not reseeded per script); with runs in parallel, which run gets
//     which number is the order they draw in.
//   - An error raised by a library function under pcall carries the
//     script's position ("user_script:1: ..."); Lua 5.1 adds none there.
//     Errors of indexing or calling nil, booleans, numbers, functions and
//     threads use Lua's words but name no variable ("attempt to index a nil
//     value", where Lua says "attempt to index local 'x' (a nil value)").
//   - There is no string.dump (Redis has one; no Lua in Redis can load its
//     output). string.rep refuses results over 512 MiB.
//   - Several scripts can be busy at once; KILL stops all the killable
//     ones; FUNCTION STATS shows the oldest run.
//   - FUNCTION DUMP writes Redis's payload (RDB FUNCTION2 records, version
//     10, CRC-64) uncompressed; RESTORE reads Redis's LZF payloads.
package script
