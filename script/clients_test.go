package script

import "testing"

// The scripts libraries really send, as they send them.
const (
	// redis-py redis/lock.py
	redisPyRelease = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    `
	redisPyExtend = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        local expiration = redis.call('pttl', KEYS[1])
        if not expiration then
            expiration = 0
        end
        if expiration < 0 then
            return 0
        end

        local newttl = ARGV[2]
        if ARGV[3] == "0" then
            newttl = ARGV[2] + expiration
        end
        redis.call('pexpire', KEYS[1], newttl)
        return 1
    `
	redisPyReacquire = `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    `
	// django-redis client/default.py _incr
	djangoIncr = `
local exists = redis.call('EXISTS', KEYS[1])
if (exists == 1) then
    return redis.call('INCRBY', KEYS[1], ARGV[1])
else return false end
`
	// Laravel Illuminate/Cache/LuaScripts.php releaseLock
	laravelRelease = `
if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end
`
	// Laravel Illuminate/Cache/RedisStore.php add
	laravelAdd = "return redis.call('exists',KEYS[1])<1 and redis.call('setex',KEYS[1],ARGV[2],ARGV[1])"
)

func TestClientScripts(t *testing.T) {
	e := New(Options{})
	db := newFakeDB()
	sha := map[string]string{}
	for _, s := range []string{redisPyRelease, redisPyExtend, redisPyReacquire} {
		// redis-py registers its scripts and sends EVALSHA, falling back to
		// EVAL on NOSCRIPT.
		sha[s] = e.Script(argv("SCRIPT", "LOAD", s)).Text()
	}
	steps := []struct {
		name string
		do   func() string
		want string
	}{
		{"acquire", func() string { return resp2(db.Call(&Run{}, argv("set", "lock", "tok1", "nx", "px", "10000"))) }, "+OK\r\n"},
		{"second holder refused", func() string { return resp2(db.Call(&Run{}, argv("set", "lock", "tok2", "nx", "px", "10000"))) }, "$-1\r\n"},
		{"extend additive", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyExtend], "1", "lock", "tok1", "5000", "0") }, ":1\r\n"},
		{"extended ttl", func() string { return db.m["lock"] + ":" + itoa64(db.ttl["lock"]) }, "tok1:15000"},
		{"extend replace", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyExtend], "1", "lock", "tok1", "3000", "1") }, ":1\r\n"},
		{"replaced ttl", func() string { return itoa64(db.ttl["lock"]) }, "3000"},
		{"extend by other", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyExtend], "1", "lock", "tok2", "3000", "1") }, ":0\r\n"},
		{"reacquire", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyReacquire], "1", "lock", "tok1", "9000") }, ":1\r\n"},
		{"reacquired ttl", func() string { return itoa64(db.ttl["lock"]) }, "9000"},
		{"reacquire by other", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyReacquire], "1", "lock", "tok2", "9000") }, ":0\r\n"},
		{"release by other", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyRelease], "1", "lock", "tok2") }, ":0\r\n"},
		{"release", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyRelease], "1", "lock", "tok1") }, ":1\r\n"},
		{"released", func() string { _, ok := db.m["lock"]; return map[bool]string{true: "held", false: "free"}[ok] }, "free"},
		{"release again", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyRelease], "1", "lock", "tok1") }, ":0\r\n"},
		{"extend released", func() string { return eval(t, e, db, "EVALSHA", sha[redisPyExtend], "1", "lock", "tok1", "5000", "0") }, ":0\r\n"},

		{"django incr missing", func() string { return eval(t, e, db, "EVAL", djangoIncr, "1", "n", "5") }, "$-1\r\n"},
		{"django set", func() string { return resp2(db.Call(&Run{}, argv("set", "n", "10"))) }, "+OK\r\n"},
		{"django incr", func() string { return eval(t, e, db, "EVAL", djangoIncr, "1", "n", "5") }, ":15\r\n"},
		{"django decr", func() string { return eval(t, e, db, "EVAL", djangoIncr, "1", "n", "-20") }, ":-5\r\n"},

		{"laravel add", func() string { return eval(t, e, db, "EVAL", laravelAdd, "1", "c", "v1", "60") }, "+OK\r\n"},
		{"laravel add again", func() string { return eval(t, e, db, "EVAL", laravelAdd, "1", "c", "v2", "60") }, "$-1\r\n"},
		{"laravel kept first", func() string { return db.m["c"] + ":" + itoa64(db.ttl["c"]) }, "v1:60000"},
		{"laravel lock", func() string { return resp2(db.Call(&Run{}, argv("set", "L", "owner1", "nx"))) }, "+OK\r\n"},
		{"laravel release other", func() string { return eval(t, e, db, "EVAL", laravelRelease, "1", "L", "owner2") }, ":0\r\n"},
		{"laravel release", func() string { return eval(t, e, db, "EVAL", laravelRelease, "1", "L", "owner1") }, ":1\r\n"},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %q, want %q", s.name, got, s.want)
		}
	}
}

func itoa64(n int64) string {
	return string(AppendReply(nil, Int(n), 2)[1 : len(AppendReply(nil, Int(n), 2))-2])
}
