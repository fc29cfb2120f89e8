package script

import (
	"strconv"
	"strings"
	"testing"
)

// Expected replies were taken from redis-server 7.0.15 with the same
// scripts (see the package doc on what differs).
func TestEvalConversionsAndErrors(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	db.m["s"] = "foo"
	sha := func(body string) string { return sha1hex([]byte(body)) }
	for _, tc := range []struct {
		name   string
		script string
		keys   []string
		want   string
	}{
		{"array nested", "return {1,2,3,'ciao',{1,2}}", nil, "*5\r\n:1\r\n:2\r\n:3\r\n$4\r\nciao\r\n*2\r\n:1\r\n:2\r\n"},
		{"float truncated", "return 3.99", nil, ":3\r\n"},
		{"negative float", "return -3.99", nil, ":-3\r\n"},
		{"array stops at nil", "return {1,nil,3}", nil, "*1\r\n:1\r\n"},
		{"true", "return true", nil, ":1\r\n"},
		{"false", "return false", nil, "$-1\r\n"},
		{"nil", "return nil", nil, "$-1\r\n"},
		{"status crlf", "return redis.status_reply('a\\r\\nb')", nil, "+a  b\r\n"},
		{"ok table", "return {ok='x'}", nil, "+x\r\n"},
		{"err table", "return {err='x'}", nil, "-x\r\n"},
		{"error_reply dash", "return redis.error_reply('-x y')", nil, "-x y\r\n"},
		{"error_reply code", "return redis.error_reply('x')", nil, "-ERR x\r\n"},
		{"error_reply bad", "return redis.error_reply(5)", nil, "-ERR wrong number or type of arguments\r\n"},
		{"double resp2", "return {double=3.5}", nil, "$3\r\n3.5\r\n"},
		{"map resp2", "return {map={a=1}}", nil, "*2\r\n$1\r\na\r\n:1\r\n"},
		{"set resp2", "return {set={a=true}}", nil, "*1\r\n$1\r\na\r\n"},
		{"big number", "return {big_number='123'}", nil, "$3\r\n123\r\n"},
		{"mixed array", "return {1, 'a', true, false, 3}", nil, "*5\r\n:1\r\n$1\r\na\r\n:1\r\n$-1\r\n:3\r\n"},
		{"errors inside array", "return {1,2,{err='x'},4}", nil, "*4\r\n:1\r\n:2\r\n-x\r\n:4\r\n"},
		{"hash part ignored", "return {a=1, 2}", nil, "*1\r\n:2\r\n"},
		{"huge", "return {math.huge, -math.huge}", nil, "*2\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n"},
		{"sha1hex", "return redis.sha1hex('')", nil, "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
		{"keys", "return #KEYS", []string{"a", "b"}, ":2\r\n"},
		{"status to lua", "return redis.call('ping').ok", nil, "$4\r\nPONG\r\n"},
		{"null bulk to false", "return redis.call('get','nokey') == false", nil, ":1\r\n"},
		{"number arg %.17g", "redis.call('set','k',3.5) return redis.call('get','k')", nil, "$3\r\n3.5\r\n"},
		{"number arg exp", "redis.call('set','k',1e20) return redis.call('get','k')", nil, "$5\r\n1e+20\r\n"},
		{"pcall table", "local r = redis.pcall('incr','s') return {type(r), r.err}", nil, "*2\r\n$5\r\ntable\r\n$43\r\nERR value is not an integer or out of range\r\n"},
		{"pcall returned", "return redis.pcall('incr','s')", nil, "-ERR value is not an integer or out of range\r\n"},
		{"lua pcall of call", "local ok, r = pcall(redis.call, 'incr','s') return {tostring(ok), r}", nil, "*2\r\n$5\r\nfalse\r\n$43\r\nERR value is not an integer or out of range\r\n"},
		{"lua pcall error table", "local ok, e = pcall(function() error({err='x'}) end) return e", nil, "$1\r\nx\r\n"},
		{"lua pcall error string", "local ok, e = pcall(function() error('x') end) return e", nil, "$16\r\nuser_script:1: x\r\n"},
		{"pcall bad args", "return redis.pcall({})", nil, "-ERR Lua redis lib command arguments must be strings or integers\r\n"},
		{"version", "return type(redis.REDIS_VERSION) .. redis.REDIS_VERSION_NUM", nil, "$12\r\nstring459264\r\n"},
		{"replicate_commands", "return redis.replicate_commands()", nil, ":1\r\n"},
		{"set_repl", "return redis.set_repl(redis.REPL_ALL)", nil, "$-1\r\n"},
		{"breakpoint", "return redis.breakpoint()", nil, "$-1\r\n"},
		{"loadstring", "return loadstring('return 1')()", nil, ":1\r\n"},
		{"method on string", "local s = 'x' return s:upper()", nil, "$1\r\nX\r\n"},
		{"_VERSION", "return _VERSION", nil, "$7\r\nLua 5.1\r\n"},
		{"string.rep", "return string.rep('x', 3)", nil, "$3\r\nxxx\r\n"},
		{"string.format", "return string.format('%d %s %5.2f', 3, 'x', 1.5)", nil, "$9\r\n3 x  1.50\r\n"},
		{"math.random deterministic", "return math.random(100) == math.random(100)", nil, "$-1\r\n"},
		{"globals list", "local t={} for k in pairs(_G) do t[#t+1]=k end table.sort(t) return table.concat(t,' ')", nil,
			"$249\r\nARGV KEYS _G _VERSION assert bit cjson cmsgpack collectgarbage coroutine error gcinfo getmetatable ipairs load loadstring math next pairs pcall rawequal rawget rawset redis select setmetatable string struct table tonumber tostring type unpack xpcall\r\n"},
		{"rawget sees globals", "return type(rawget(_G, 'redis'))", nil, "$5\r\ntable\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"EVAL", tc.script, itoa(len(tc.keys))}, tc.keys...)
			if got := eval(t, e, db, args...); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Errors name the script and the line, as Redis 7 does.
	for _, tc := range []struct {
		name, script, want string
	}{
		{"write global", "a=10", "-ERR user_script:1: Attempt to modify a readonly table script: %s, on @user_script:1.\r\n"},
		{"read undeclared", "return a", "-ERR user_script:1: Script attempted to access nonexistent global variable 'a' script: %s, on @user_script:1.\r\n"},
		{"no os", "return os.clock()", "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: %s, on @user_script:1.\r\n"},
		{"no io", "return io", "-ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: %s, on @user_script:1.\r\n"},
		{"no print", "return tostring(print)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: %s, on @user_script:1.\r\n"},
		{"no dofile", "return type(dofile)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'dofile' script: %s, on @user_script:1.\r\n"},
		{"no require", "return type(require)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'require' script: %s, on @user_script:1.\r\n"},
		{"no getfenv", "return type(getfenv)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: %s, on @user_script:1.\r\n"},
		{"no debug", "return type(debug)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'debug' script: %s, on @user_script:1.\r\n"},
		{"_G write", "_G.x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: %s, on @user_script:1.\r\n"},
		{"rawset _G", "rawset(_G, 'x', 1)", "-ERR Attempt to modify a readonly table script: %s, on @user_script:1.\r\n"},
		{"library write", "string.foo = 1", "-ERR user_script:1: Attempt to modify a readonly table script: %s, on @user_script:1.\r\n"},
		{"wrong arity", "return redis.call('incr','x','y')", "-ERR Wrong number of args calling Redis command from script script: %s, on @user_script:1.\r\n"},
		{"command error", "return redis.call('incr',KEYS[1])", "-ERR value is not an integer or out of range script: %s, on @user_script:1.\r\n"},
		{"error()", "error('boom')", "-ERR user_script:1: boom script: %s, on @user_script:1.\r\n"},
		{"error table", "error({err='MY boom'})", "-MY boom script: %s, on @user_script:1.\r\n"},
		{"unknown command", "return redis.call('nosuch')", "-ERR Unknown Redis command called from script script: %s, on @user_script:1.\r\n"},
		{"not allowed", "return redis.call('eval','return 1',0)", "-ERR This Redis command is not allowed from script script: %s, on @user_script:1.\r\n"},
		{"no args", "return redis.call()", "-ERR Please specify at least one argument for this redis lib call script: %s, on @user_script:1.\r\n"},
		{"table arg", "return redis.call('get',{})", "-ERR Lua redis lib command arguments must be strings or integers script: %s, on @user_script:1.\r\n"},
		{"nil key", "return redis.call('set', KEYS[2], 'v')", "-ERR Lua redis lib command arguments must be strings or integers script: %s, on @user_script:1.\r\n"},
		{"sha1hex arity", "return redis.sha1hex()", "-ERR wrong number of arguments script: %s, on @user_script:1.\r\n"},
		{"log level", "return redis.log(99, 'hi')", "-ERR Invalid debug level. script: %s, on @user_script:1.\r\n"},
		{"log arity", "return redis.log(1)", "-ERR redis.log() requires two arguments or more. script: %s, on @user_script:1.\r\n"},
		{"setresp", "return redis.setresp(4)", "-ERR RESP version must be 2 or 3. script: %s, on @user_script:1.\r\n"},
		{"second line", "local x = 1\nerror('two')", "-ERR user_script:2: two script: %s, on @user_script:2.\r\n"},
		{"shebang keeps lines", "#!lua\nreturn error('x')", "-ERR user_script:2: x script: %s, on @user_script:2.\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := eval(t, e, db, "EVAL", tc.script, "1", "s")
			want := strings.Replace(tc.want, "%s", sha(tc.script), 1)
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func itoa(n int) string { return string(AppendReply(nil, Int(int64(n)), 2))[1:2] }

func TestEvalCommandErrors(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{[]string{"EVALSHA_RO", "aaaa", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{[]string{"EVAL", "return 1", "-1"}, "-ERR Number of keys can't be negative\r\n"},
		{[]string{"EVAL", "return 1", "2", "a"}, "-ERR Number of keys can't be greater than number of args\r\n"},
		{[]string{"EVAL", "return 1", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"EVAL", "return 'x", "0"}, "-ERR Error compiling script (new function): user_script:"},
		{[]string{"EVAL_RO", "return redis.call('set','a','b')", "1", "a"}, "-ERR Write commands are not allowed from read-only scripts. script: "},
		{[]string{"EVAL_RO", "return redis.call('get','x')", "0"}, "$-1\r\n"},
		{[]string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','b')", "0"}, "-ERR Write commands are not allowed from read-only scripts. script: "},
		{[]string{"EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"}, ":1\r\n"},
		{[]string{"EVAL_RO", "#!lua\nreturn 1", "0"}, "-ERR Can not execute a script with write flag using *_ro command.\r\n"},
		{[]string{"EVAL", "#!lua flags=bad\nreturn 1", "0"}, "-ERR Unexpected flag in script shebang: bad\r\n"},
		{[]string{"EVAL", "#!lua foo=bar\nreturn 1", "0"}, "-ERR Unknown lua shebang option: foo=bar\r\n"},
		{[]string{"EVAL", "#!luax\nreturn 1", "0"}, "-ERR Unexpected engine in script shebang: #!luax\r\n"},
		{[]string{"EVAL", "#!lua", "0"}, "-ERR Invalid script shebang\r\n"},
		{[]string{"EVAL", "#!lua  flags=no-writes,allow-oom\nreturn 1", "0"}, ":1\r\n"},
	} {
		got := eval(t, e, db, tc.args...)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q, want prefix %q", tc.args, got, tc.want)
		}
	}
}

func TestScriptCommands(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SCRIPT", "LOAD", "return 1"}, "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n"},
		{[]string{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffffffffffffffffffffffffffffffffffffffff", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"}, "*3\r\n:1\r\n:0\r\n:1\r\n"},
		{[]string{"SCRIPT", "FLUSH", "foo"}, "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"},
		{[]string{"SCRIPT", "FLUSH", "async"}, "+OK\r\n"},
		{[]string{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, "*1\r\n:0\r\n"},
		{[]string{"SCRIPT", "foo"}, "-ERR unknown subcommand 'foo'. Try SCRIPT HELP.\r\n"},
		{[]string{"SCRIPT", "LOAD"}, "-ERR wrong number of arguments for 'script|load' command\r\n"},
		{[]string{"SCRIPT", "KILL"}, "-NOTBUSY No scripts in execution right now.\r\n"},
		{[]string{"SCRIPT", "LOAD", "return 'x"}, "-ERR Error compiling script (new function): user_script:"},
	} {
		if got := resp2(e.Script(argv(tc.args...))); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	e.Script(argv("SCRIPT", "LOAD", "return ARGV[1]"))
	if got := eval(t, e, db, "EVALSHA", sha1hex([]byte("return ARGV[1]")), "0", "hi"); got != "$2\r\nhi\r\n" {
		t.Errorf("EVALSHA after SCRIPT LOAD: got %q", got)
	}
}

func TestSetrespRESP3(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	for _, tc := range []struct {
		script string
		proto  int
		want   string
	}{
		{"redis.setresp(3) return redis.call('hgetall','nokey')", 2, "*0\r\n"},
		{"redis.setresp(3) return redis.call('hgetall','nokey')", 3, "%0\r\n"},
		{"redis.setresp(3) return {double=3.5}", 3, ",3.5\r\n"},
		{"redis.setresp(3) return true", 3, "#t\r\n"},
		{"redis.setresp(3) return false", 3, "#f\r\n"},
		{"redis.setresp(3) return false", 2, ":0\r\n"},
		{"return false", 3, "_\r\n"},
		{"return {map={a=1}}", 3, "%1\r\n$1\r\na\r\n:1\r\n"},
		{"return {set={a=true}}", 3, "~1\r\n$1\r\na\r\n"},
		{"redis.setresp(3) local m = redis.call('hgetall','x') return type(m.map)", 2, "$5\r\ntable\r\n"},
	} {
		v := e.Eval(db, argv("EVAL", tc.script, "0"))
		if got := string(AppendReply(nil, v, tc.proto)); got != tc.want {
			t.Errorf("%q proto %d: got %q, want %q", tc.script, tc.proto, got, tc.want)
		}
	}
}

// TestUnpackBounded: unpack refuses a range Lua 5.1's stack cannot hold at
// once, as Redis's Lua does, instead of pushing two billion values.
func TestUnpackBounded(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct{ script, want string }{
		{"return {unpack({1,2,3}, -2, 2147483647)}", "too many results to unpack"},
		{"return {unpack({1,2,3}, 0, 2147483647)}", "too many results to unpack"},
		{"return {unpack({1,2,3}, 2)}", ""},
	} {
		v := e.Eval(CallerFunc(func(*Run, [][]byte) Value { return Status("OK") }), [][]byte{[]byte("eval"), []byte(tc.script), []byte("0")})
		got := ""
		if v.IsError() {
			got = string(v.Str)
		}
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.script, got, tc.want)
		}
	}
}

func TestCachedScripts(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		args  []string
		n     int
		bytes int64
	}{
		{[]string{"SCRIPT", "LOAD", "return 1"}, 1, 8},
		{[]string{"SCRIPT", "LOAD", "return 1"}, 1, 8},
		{[]string{"SCRIPT", "LOAD", "return 22"}, 2, 17},
		{[]string{"SCRIPT", "FLUSH", "ASYNC"}, 0, 0},
	} {
		e.Script(argv(tc.args...))
		if n, b := e.CachedScripts(); n != tc.n || b != tc.bytes {
			t.Errorf("after %q: got %d scripts, %d bytes; want %d, %d", tc.args, n, b, tc.n, tc.bytes)
		}
	}
}

// TestRunRecord checks what a Caller is told about the run: the command's
// lowercase name whatever its case, the script's lowercase SHA1 whatever
// the case of EVALSHA's argument.
func TestRunRecord(t *testing.T) {
	e := New(Options{})
	const body = "return redis.call('ping')"
	sha := e.Script(argv("SCRIPT", "LOAD", body)).Text()
	var got []string
	c := CallerFunc(func(run *Run, args [][]byte) Value {
		got = append(got, run.Command+" "+run.Name+" "+strconv.FormatBool(run.ReadOnly))
		return Status("PONG")
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EVALSHA", sha, "0"}, "evalsha " + sha + " false"},
		{[]string{"evalSHA", strings.ToUpper(sha), "0"}, "evalsha " + sha + " false"},
		{[]string{"EvalSha_RO", sha, "0"}, "evalsha_ro " + sha + " true"},
		{[]string{"Eval", body, "0"}, "eval " + sha + " false"},
		{[]string{"EVAL_RO", body, "0"}, "eval_ro " + sha + " true"},
	} {
		got = got[:0]
		if reply := eval(t, e, c, tc.args...); reply != "+PONG\r\n" {
			t.Errorf("%q: reply %q", tc.args, reply)
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%q: run %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestCallerReplySharesBuffer: a Caller may return replies that share its
// buffer (as the proxy's, parsed by ParseReply, do): the script keeps what
// each call returned after the next call reuses the buffer. And the
// arguments a script passes are separate slices: changing one in the
// Caller changes no other.
func TestCallerReplySharesBuffer(t *testing.T) {
	e := New(Options{})
	var buf []byte
	c := CallerFunc(func(run *Run, args [][]byte) Value {
		args[1] = append(args[1], "-grown"...)
		buf = append(buf[:0], "$"...)
		buf = strconv.AppendInt(buf, int64(len(args[1])+len(args[2])), 10)
		buf = append(buf, "\r\n"...)
		buf = append(buf, args[1]...)
		buf = append(buf, args[2]...)
		buf = append(buf, "\r\n"...)
		v, _, err := ParseReply(buf)
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
	got := eval(t, e, c, "EVAL", "local a = redis.call('echo', 'one', 1.5) local b = redis.call('echo', 'two', 'x') return {a, b}", "0")
	if want := "*2\r\n$12\r\none-grown1.5\r\n$10\r\ntwo-grownx\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestArgTablesFreshEachRun: whatever a script does to KEYS and ARGV, the
// next run on the same Lua state sees tables holding its own keys and
// arguments and nothing else; and a function (FCALL) sees no KEYS global
// left by an EVAL, as in Redis.
func TestArgTablesFreshEachRun(t *testing.T) {
	e := New(Options{PoolSize: 1})
	db := newFakeDB()
	const check = `return {#KEYS, #ARGV, KEYS[1], ARGV[1], tostring(KEYS[3]), tostring(ARGV[2]),
		tostring(rawget(KEYS, 'x')), tostring(getmetatable(ARGV)), tostring(next(KEYS, 1)), tostring(next(ARGV, 1))}`
	const want = "*10\r\n:1\r\n:1\r\n$1\r\nk\r\n$1\r\na\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
	for _, change := range []string{
		"",
		"KEYS[1] = 'changed' ARGV[1] = nil",
		"table.insert(KEYS, 'more') table.insert(ARGV, 1, 'first')",
		"KEYS.x = 1 ARGV[1000000] = 'far'",
		"KEYS.x = 1 KEYS.x = nil",
		"setmetatable(ARGV, {__index = function() return 'meta' end})",
		"for i = 1, 100 do KEYS[i] = i ARGV[i] = i end",
		"table.remove(KEYS) table.remove(ARGV)",
		"KEYS[3] = 'gap'",
	} {
		if got := eval(t, e, db, "EVAL", change+" return 1", "2", "k1", "k2", "a1", "a2", "a3"); got != ":1\r\n" {
			t.Fatalf("%q: %q", change, got)
		}
		if got := eval(t, e, db, "EVAL", check, "1", "k", "a"); got != want {
			t.Errorf("after %q: got %q, want %q", change, got, want)
		}
	}
	fn(e, "LOAD", "#!lua name=peek\nredis.register_function('peek', function() return KEYS end)")
	eval(t, e, db, "EVAL", "return 1", "1", "secret")
	if got := resp2(e.FCall(db, argv("FCALL", "peek", "0"))); !strings.Contains(got, "Script attempted to access nonexistent global variable 'KEYS'") {
		t.Errorf("FCALL reading KEYS after an EVAL: %q", got)
	}
}

// TestManyScriptsOneState: a Lua state keeps the closures of at most
// maxClosures scripts; past that it starts again, and every script still
// runs its own body, also after SCRIPT FLUSH.
func TestManyScriptsOneState(t *testing.T) {
	e := New(Options{PoolSize: 1})
	db := newFakeDB()
	for round := range 2 {
		for i := range maxClosures + 10 {
			n := strconv.Itoa(i)
			if got := eval(t, e, db, "EVAL", "return "+n, "0"); got != ":"+n+"\r\n" {
				t.Fatalf("round %d, script %d: %q", round, i, got)
			}
		}
		e.Script(argv("SCRIPT", "FLUSH"))
	}
}
