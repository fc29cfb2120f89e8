package script

import (
	"strings"
	"testing"
	"time"
)

// waitBusy polls Running until a run is busy (the run is on another
// goroutine; this waits for it, it does not measure it).
func waitBusy(t *testing.T, e *Engine) RunInfo {
	t.Helper()
	for i := 0; i < 2000; i++ {
		for _, r := range e.Running() {
			if r.Busy {
				return r
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no busy script")
	return RunInfo{}
}

func TestBusyAndKill(t *testing.T) {
	e := New(Options{BusyThreshold: 20 * time.Millisecond})
	db := newFakeDB()
	if got := resp2(e.Kill(false)); got != "-NOTBUSY No scripts in execution right now.\r\n" {
		t.Fatalf("kill idle: %q", got)
	}
	// A loop that pcall tries to survive: the kill still ends it.
	done := make(chan string)
	script := "local i=0 while true do pcall(function() i=i+1 end) end"
	go func() { done <- resp2(e.Eval(db, argv("EVAL", script, "0"))) }()
	r := waitBusy(t, e)
	if r.Function || r.Command != "eval" || r.Wrote {
		t.Errorf("running: %+v", r)
	}
	if got := resp2(e.Function(argv("FUNCTION", "KILL"))); got != "-"+ErrBusyEval+"\r\n" {
		t.Errorf("FUNCTION KILL of a script: %q", got)
	}
	if got := resp2(e.Script(argv("SCRIPT", "KILL"))); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	got := <-done
	want := "-ERR Script killed by user with SCRIPT KILL... script: " + sha1hex([]byte(script)) + ", on @user_script:1.\r\n"
	if got != want {
		t.Errorf("killed script: got %q, want %q", got, want)
	}
	// The engine keeps serving.
	if got := eval(t, e, db, "EVAL", "return 1", "0"); got != ":1\r\n" {
		t.Errorf("after kill: %q", got)
	}

	// A script that wrote cannot be killed.
	stop := make(chan struct{})
	go func() {
		done <- resp2(e.Eval(CallerFunc(func(run *Run, args [][]byte) Value {
			if string(args[0]) == "wait" {
				<-stop
				return Status("OK")
			}
			return db.Call(run, args)
		}), argv("EVAL", "redis.call('set','w','1') redis.call('wait') return 2", "0")))
	}()
	waitBusy(t, e)
	if got := resp2(e.Script(argv("SCRIPT", "KILL"))); !strings.HasPrefix(got, "-UNKILLABLE Sorry the script already executed write commands") {
		t.Errorf("kill after write: %q", got)
	}
	close(stop)
	if got := <-done; got != ":2\r\n" {
		t.Errorf("unkillable script result: %q", got)
	}

	// FUNCTION KILL stops a function.
	fn(e, "LOAD", "#!lua name=loop\nredis.register_function('loop', function() while true do end end)")
	go func() { done <- resp2(e.FCall(db, argv("FCALL", "loop", "0"))) }()
	waitBusy(t, e)
	if got := resp2(e.Script(argv("SCRIPT", "KILL"))); got != "-"+ErrBusyFunction+"\r\n" {
		t.Errorf("SCRIPT KILL of a function: %q", got)
	}
	if got := fn(e, "KILL"); got != "+OK\r\n" {
		t.Fatalf("FUNCTION KILL: %q", got)
	}
	if got := <-done; got != "-ERR Script killed by user with SCRIPT KILL... script: loop, on @user_function:2.\r\n" {
		t.Errorf("killed function: %q", got)
	}
}

func TestMemoryLimit(t *testing.T) {
	e := New(Options{MemoryLimit: 32 << 20, BusyThreshold: -1})
	db := newFakeDB()
	// Keeps every string it makes: the live heap grows until the watchdog
	// stops it.
	got := eval(t, e, db, "EVAL", "local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1000) .. i end", "0")
	if !strings.HasPrefix(got, "-ERR not enough memory script: ") {
		t.Errorf("got %q", got)
	}
	if got := eval(t, e, db, "EVAL", "return 1", "0"); got != ":1\r\n" {
		t.Errorf("after the memory kill: %q", got)
	}
}

func TestStackLimits(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	got := eval(t, e, db, "EVAL", "local function f(n) return f(n+1)+1 end return f(1)", "0")
	if !strings.HasPrefix(got, "-ERR ") {
		t.Errorf("deep recursion: %q", got)
	}
}

func TestLibraries(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	for _, tc := range []struct{ script, want string }{
		// Expected values from redis-server 7.0.15.
		{"return cjson.encode({1,2,{a=1}})", "$13\r\n[1,2,{\"a\":1}]\r\n"},
		{"return cjson.encode({})", "$2\r\n{}\r\n"},
		{"return cjson.encode({a={1,2,3}})", "$13\r\n{\"a\":[1,2,3]}\r\n"},
		{"return cjson.encode('a/b\\n')", "$8\r\n\"a\\/b\\n\"\r\n"},
		{"return cjson.decode('[1,2,null,{\"a\":true}]')[3] == cjson.null", ":1\r\n"},
		{"return cjson.decode('{\"a\":[1,2,3]}').a[2]", ":2\r\n"},
		{"return cjson.decode('\"\\\\u00e9\"')", "$2\r\n\xc3\xa9\r\n"},
		{"return cjson.encode(cjson.decode('{\"x\":1.5}'))", "$9\r\n{\"x\":1.5}\r\n"},
		{"local t = {} t[100] = 1 return pcall(cjson.encode, t)", "$-1\r\n"},
		{"return cmsgpack.pack({1,2,'x'})", "$5\r\n\x93\x01\x02\xa1x\r\n"},
		{"return cmsgpack.unpack(cmsgpack.pack({1,2,'x'}))[3]", "$1\r\nx\r\n"},
		{"local a, b = cmsgpack.unpack(cmsgpack.pack(-5, 1.5)) return {a, b * 2}", "*2\r\n:-5\r\n:3\r\n"},
		{"return cmsgpack.unpack(cmsgpack.pack({a=300}))['a']", ":300\r\n"},
		{"return bit.tohex(65535) .. ' ' .. bit.band(5,3) .. ' ' .. bit.lshift(1,31)", "$22\r\n0000ffff 1 -2147483648\r\n"},
		{"return {bit.bor(1,2,4), bit.bxor(7,2), bit.bnot(0), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.tohex(-1, -4)}", "*6\r\n:7\r\n:5\r\n:-1\r\n:15\r\n:-4\r\n$4\r\nFFFF\r\n"},
		{"return struct.pack('>I2', 258)", "$2\r\n\x01\x02\r\n"},
		{"return {struct.unpack('<i4', struct.pack('<i4', -2))}", "*2\r\n:-2\r\n:5\r\n"},
		{"return struct.size('>iHb')", ":7\r\n"},
		{"local s, p = struct.unpack('s', struct.pack('s', 'hi')) return {s, p}", "*2\r\n$2\r\nhi\r\n:4\r\n"},
	} {
		if got := eval(t, e, db, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.script, got, tc.want)
		}
	}
}

func TestParseReply(t *testing.T) {
	for _, in := range []string{
		"+OK\r\n", "-ERR x\r\n", ":-5\r\n", "$3\r\nfoo\r\n", "$-1\r\n", "*2\r\n:1\r\n$1\r\na\r\n", "*0\r\n",
	} {
		v, n, err := ParseReply([]byte(in + "trailing"))
		if err != nil || n != len(in) {
			t.Fatalf("%q: n %d err %v", in, n, err)
		}
		if got := string(AppendReply(nil, v, 2)); got != in {
			t.Errorf("round trip %q: %q", in, got)
		}
	}
	for _, tc := range []struct{ in, resp2, resp3 string }{
		{"%1\r\n+a\r\n:1\r\n", "*2\r\n+a\r\n:1\r\n", "%1\r\n+a\r\n:1\r\n"},
		{"~1\r\n:1\r\n", "*1\r\n:1\r\n", "~1\r\n:1\r\n"},
		{",1.5\r\n", "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"#t\r\n", ":1\r\n", "#t\r\n"},
		{"_\r\n", "$-1\r\n", "_\r\n"},
		{"=8\r\ntxt:abcd\r\n", "$4\r\nabcd\r\n", "=8\r\ntxt:abcd\r\n"},
		{"(123\r\n", "$3\r\n123\r\n", "(123\r\n"},
		{"|1\r\n+k\r\n+v\r\n:7\r\n", ":7\r\n", ":7\r\n"},
		{"*-1\r\n", "$-1\r\n", "_\r\n"},
	} {
		v, _, err := ParseReply([]byte(tc.in))
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := string(AppendReply(nil, v, 2)); got != tc.resp2 {
			t.Errorf("%q as RESP2: %q, want %q", tc.in, got, tc.resp2)
		}
		if got := string(AppendReply(nil, v, 3)); got != tc.resp3 {
			t.Errorf("%q as RESP3: %q, want %q", tc.in, got, tc.resp3)
		}
	}
	for _, in := range []string{"$3\r\nfo", "*2\r\n:1\r\n", ":1"} {
		if _, _, err := ParseReply([]byte(in)); err != ErrIncomplete {
			t.Errorf("%q: err %v, want ErrIncomplete", in, err)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n:1\r\n$1\r\na\r\n", "%1\r\n+a\r\n:1\r\n", "|1\r\n+k\r\n+v\r\n:7\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := ParseReply(b)
		if err == nil && (n <= 0 || n > len(b)) {
			t.Fatalf("n %d of %d", n, len(b))
		}
		_ = AppendReply(nil, v, 3)
	})
}

// TestKillInCoroutine: SCRIPT KILL stops a script looping inside a
// coroutine, also on a Lua state whose earlier run left a coroutine
// suspended (the state then replaces the context its runs stop by).
func TestKillInCoroutine(t *testing.T) {
	e := New(Options{BusyThreshold: 20 * time.Millisecond, PoolSize: 1})
	db := newFakeDB()
	for i := range 2 {
		if got := eval(t, e, db, "EVAL", "local co = coroutine.wrap(function() coroutine.yield(1) end) return co()", "0"); got != ":1\r\n" {
			t.Fatalf("run %d leaving a coroutine suspended: %q", i, got)
		}
	}
	script := "local co = coroutine.create(function() while true do end end) local ok, err = coroutine.resume(co) return err"
	done := make(chan string)
	go func() { done <- resp2(e.Eval(db, argv("EVAL", script, "0"))) }()
	waitBusy(t, e)
	if got := resp2(e.Script(argv("SCRIPT", "KILL"))); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	want := "-ERR Script killed by user with SCRIPT KILL... script: " + sha1hex([]byte(script)) + ", on @user_script:1.\r\n"
	if got := <-done; got != want {
		t.Errorf("killed script: got %q, want %q", got, want)
	}
	if got := eval(t, e, db, "EVAL", "return coroutine.wrap(function() return 2 end)()", "0"); got != ":2\r\n" {
		t.Errorf("after kill: %q", got)
	}
}
