package script

import (
	"strings"
	"testing"
)

func fn(e *Engine, args ...string) string {
	return resp2(e.Function(argv(append([]string{"FUNCTION"}, args...)...)))
}

func TestFunctions(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	lib := "#!lua name=mylib\nredis.register_function{function_name='f1', callback=function(keys, args) return redis.call('set',keys[1],args[1]) end, flags={'no-writes'}, description='desc'}\nredis.register_function('f2', function(keys, args) return #args end)"
	fc := func(args ...string) string { return resp2(e.FCall(db, argv(args...))) }
	for _, tc := range []struct {
		name string
		got  func() string
		want string
	}{
		{"load", func() string {
			return fn(e, "LOAD", "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return keys[1] end)")
		}, "$5\r\nmylib\r\n"},
		{"exists", func() string {
			return fn(e, "LOAD", "#!lua name=mylib\nredis.register_function('f1', function() return 1 end)")
		}, "-ERR Library 'mylib' already exists\r\n"},
		{"replace", func() string { return fn(e, "LOAD", "REPLACE", lib) }, "$5\r\nmylib\r\n"},
		{"no-writes refuses", func() string { return fc("FCALL", "f1", "1", "k", "v") }, "-ERR Write commands are not allowed from read-only scripts. script: f1, on @user_function:2.\r\n"},
		{"args", func() string { return fc("FCALL", "f2", "0", "a", "b", "c") }, ":3\r\n"},
		{"ro with write flag", func() string { return fc("FCALL_RO", "f2", "0", "a") }, "-ERR Can not execute a script with write flag using *_ro command.\r\n"},
		{"not found", func() string { return fc("FCALL", "nosuch", "0") }, "-ERR Function not found\r\n"},
		{"negative keys", func() string { return fc("FCALL", "f2", "-1") }, "-ERR Number of keys can't be negative\r\n"},
		{"too many keys", func() string { return fc("FCALL", "f2", "5") }, "-ERR Number of keys can't be greater than number of args\r\n"},
		{"bad keys", func() string { return fc("FCALL", "f2", "x") }, "-ERR Bad number of keys provided\r\n"},
		{"list", func() string { return fn(e, "LIST") }, "*1\r\n*6\r\n$12\r\nlibrary_name\r\n$5\r\nmylib\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*2\r\n*6\r\n$4\r\nname\r\n$2\r\nf1\r\n$11\r\ndescription\r\n$4\r\ndesc\r\n$5\r\nflags\r\n*1\r\n+no-writes\r\n*6\r\n$4\r\nname\r\n$2\r\nf2\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n"},
		{"list pattern miss", func() string { return fn(e, "LIST", "LIBRARYNAME", "my") }, "*0\r\n"},
		{"list pattern", func() string { return fn(e, "LIST", "LIBRARYNAME", "my*")[:4] }, "*1\r\n"},
		{"list no name", func() string { return fn(e, "LIST", "LIBRARYNAME") }, "-ERR library name argument was not given\r\n"},
		{"list bad arg", func() string { return fn(e, "LIST", "foo") }, "-ERR Unknown argument foo\r\n"},
		{"stats", func() string { return fn(e, "STATS") }, "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:2\r\n"},
		{"function taken", func() string {
			return fn(e, "LOAD", "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)")
		}, "-ERR Function f1 already exists\r\n"},
		{"no functions", func() string { return fn(e, "LOAD", "#!lua name=lib2\nreturn 1") }, "-ERR No functions registered\r\n"},
		{"no newline", func() string { return fn(e, "LOAD", "#!lua name=lib2") }, "-ERR Invalid library metadata\r\n"},
		{"no name", func() string { return fn(e, "LOAD", "#!lua\nredis.register_function('x', function() return 1 end)") }, "-ERR Library name was not given\r\n"},
		{"engine", func() string { return fn(e, "LOAD", "#!foo name=x\n") }, "-ERR Engine 'foo' not found\r\n"},
		{"missing metadata", func() string { return fn(e, "LOAD", "lua name=x\n") }, "-ERR Missing library metadata\r\n"},
		{"bad metadata", func() string { return fn(e, "LOAD", "#!lua name=lib2 foo=bar\n") }, "-ERR Invalid metadata value given: foo=bar\r\n"},
		{"name twice", func() string { return fn(e, "LOAD", "#!lua name=lib2 name=lib3\n") }, "-ERR Invalid metadata value, name argument was given multiple times\r\n"},
		{"bad lib name", func() string { return fn(e, "LOAD", "#!lua name=a-b\n") }, "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"},
		{"register arity", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function('g', function() return 1 end, 5)")
		}, "-ERR Error registering functions: ERR wrong number of arguments to redis.register_function\r\n"},
		{"register not function", func() string { return fn(e, "LOAD", "#!lua name=l3\nredis.register_function('g', 5)") }, "-ERR Error registering functions: ERR second argument to redis.register_function must be a function\r\n"},
		{"bad function name", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function('g-x', function() return 1 end)")
		}, "-ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long\r\n"},
		{"bad flag", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function{function_name='g', callback=function() return 1 end, flags={'bad'}}")
		}, "-ERR Error registering functions: ERR unknown flag given\r\n"},
		{"unknown arg", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function{function_name='g', callback=function() return 1 end, foo=1}")
		}, "-ERR Error registering functions: ERR unknown argument given to redis.register_function\r\n"},
		{"no callback", func() string { return fn(e, "LOAD", "#!lua name=l3\nredis.register_function{function_name='g'}") }, "-ERR Error registering functions: ERR redis.register_function must get a callback argument\r\n"},
		{"no name arg", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function{callback=function() return 1 end}")
		}, "-ERR Error registering functions: ERR redis.register_function must get a function name argument\r\n"},
		{"flags not table", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function{function_name='g', callback=function() return 1 end, flags='no-writes'}")
		}, "-ERR Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags\r\n"},
		{"no call at load", func() string { return fn(e, "LOAD", "#!lua name=l3\nredis.call('ping')") }, "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'\r\n"},
		{"no pairs at load", func() string { return fn(e, "LOAD", "#!lua name=l3\nlocal x = pairs") }, "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'pairs'\r\n"},
		{"global write at load", func() string { return fn(e, "LOAD", "#!lua name=l3\nx = 1") }, "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table\r\n"},
		{"compile error", func() string { return fn(e, "LOAD", "#!lua name=l3\nreturn 'x")[:44] }, "-ERR Error compiling function: user_function"},
		{"dup in library", func() string {
			return fn(e, "LOAD", "#!lua name=l3\nredis.register_function('g', function() return 1 end)\nredis.register_function('g', function() return 1 end)")
		}, "-ERR Error registering functions: ERR Function already exists in the library\r\n"},
		{"helper sees run globals", func() string {
			return fn(e, "LOAD", "#!lua name=t11\nlocal function h() return redis.call('ping') end redis.register_function('f11', function(keys, args) return h() end)")
		}, "$3\r\nt11\r\n"},
		{"helper call", func() string { return fc("FCALL", "f11", "0") }, "+PONG\r\n"},
		{"keys and args tables", func() string {
			fn(e, "LOAD", "#!lua name=t12\nredis.register_function('f12', function(keys, args) return {keys, args} end)")
			return fc("FCALL", "f12", "2", "a", "b", "c")
		}, "*2\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$1\r\nc\r\n"},
		{"no KEYS in functions", func() string {
			fn(e, "LOAD", "#!lua name=lib7\nredis.register_function('e7', function(k,a) return KEYS end)")
			return fc("FCALL", "e7", "0")
		}, "-ERR user_function:2: Script attempted to access nonexistent global variable 'KEYS' script: e7, on @user_function:2.\r\n"},
		{"error in function", func() string {
			fn(e, "LOAD", "#!lua name=lib4\nredis.register_function('e', function(k,a) return error('bad') end)")
			return fc("FCALL", "e", "0")
		}, "-ERR user_function:2: bad script: e, on @user_function:2.\r\n"},
		{"no register at run", func() string {
			fn(e, "LOAD", "#!lua name=lib9\nredis.register_function('e10', function() return redis.register_function end)")
			return fc("FCALL", "e10", "0")
		}, "$-1\r\n"},
		{"all flags", func() string {
			fn(e, "LOAD", "#!lua name=l5\nreturn redis.register_function{function_name='g5', callback=function(k,a) return redis.call('get','x') end, flags={'no-writes','allow-oom','allow-stale','no-cluster','allow-cross-slot-keys'}}")
			return fc("FCALL_RO", "g5", "0")
		}, "$-1\r\n"},
		{"delete", func() string { return fn(e, "DELETE", "lib7") }, "+OK\r\n"},
		{"delete again", func() string { return fn(e, "DELETE", "lib7") }, "-ERR Library not found\r\n"},
		{"deleted function", func() string { return fc("FCALL", "e7", "0") }, "-ERR Function not found\r\n"},
		{"flush option", func() string { return fn(e, "FLUSH", "foo") }, "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n"},
		{"restore garbage", func() string { return fn(e, "RESTORE", "garbage") }, "-ERR DUMP payload version or checksum are wrong\r\n"},
		{"kill idle", func() string { return fn(e, "KILL") }, "-NOTBUSY No scripts in execution right now.\r\n"},
		{"unknown sub", func() string { return fn(e, "FOO") }, "-ERR unknown subcommand 'FOO'. Try FUNCTION HELP.\r\n"},
	} {
		if got := tc.got(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A payload FUNCTION DUMP wrote on redis-server 7.0.15 (LZF-compressed
// strings) restores here, and a dump made here round-trips.
func TestFunctionDumpRestore(t *testing.T) {
	redisDump := "\xf5@R#!lua name=l5\nredis.register_function('loop', function(k,a) while true do end end)\xf5\xc3@^@i\x1f#!lua name=l3\nredis.register_fun\x05ction{\xc0\x08\x00_`(\r'g', callback=\xc0\x1b\x17() return 1 end, descrip@@\x02=5}\xf5\xc3@s@\x87\x1f#!lua name=l4\nreturn redis.regis\x0cter_function{\xc0\x08\x00_`/\x0e'g4', callback=\xc0\x1c\x04(k,a) B\xe0\x02I@#\x08('set','x \x03\x11y') end, flags={}}\n\x00\x0c\xac$\x02\xcb\x87\xccI"
	e := New(Options{})
	if got := fn(e, "RESTORE", redisDump); got != "+OK\r\n" {
		t.Fatalf("restore of a Redis dump: got %q", got)
	}
	if got := fn(e, "LIST", "LIBRARYNAME", "l3", "WITHCODE"); !strings.Contains(got, "description=5}") {
		t.Fatalf("restored code: %q", got)
	}
	if got := fn(e, "RESTORE", redisDump); got != "-ERR Library l5 already exists\r\n" {
		t.Errorf("append collision: got %q", got)
	}
	if got := fn(e, "RESTORE", redisDump, "REPLACE"); got != "+OK\r\n" {
		t.Errorf("replace: got %q", got)
	}
	dump := e.Function(argv("FUNCTION", "DUMP")).Str
	e2 := New(Options{})
	fn(e2, "LOAD", "#!lua name=other\nredis.register_function('o', function() return 1 end)")
	if got := resp2(e2.Function([][]byte{[]byte("FUNCTION"), []byte("RESTORE"), dump, []byte("FLUSH")})); got != "+OK\r\n" {
		t.Fatalf("restore own dump: %q", got)
	}
	if got := fn(e2, "STATS"); !strings.Contains(got, "libraries_count\r\n:3\r\n") {
		t.Errorf("after FLUSH restore: %q", got)
	}
	if got := fn(e2, "RESTORE", "x"+string(dump)[1:]); got != "-ERR DUMP payload version or checksum are wrong\r\n" {
		t.Errorf("corrupt payload: %q", got)
	}
	if got := jonesCRC([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Errorf("crc64 check value %x", got)
	}
}
