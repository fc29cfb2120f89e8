package coll

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

func init() {
	parsers["object"] = parseObjectEncoding
	parsers["exists"] = parseExists
}

// exists is EXISTS key [key ...], for the tests only: how many of the keys
// hold a value.
type exists struct {
	backends.Passed
	n int64
}

func parseExists(args [][]byte) (Command, error) {
	op := &exists{}
	op.Args, op.KeyAt = args, keysAt(1, len(args)-1)
	return op, nil
}

func (*exists) Name() string            { return "exists" }
func (*exists) Writes() backends.Writes { return backends.ReadOnly }
func (op *exists) Run(v backends.View) error {
	op.n = 0
	for i := range op.KeyAt {
		if v.Type(i) != backends.TypeNone {
			op.n++
		}
	}
	return nil
}
func (op *exists) Reply(w Writer) { w.Int(op.n) }

// parseObjectEncoding checks the subcommand, as the front's table does.
func parseObjectEncoding(args [][]byte) (Command, error) {
	if !is(args[1], "encoding") {
		return nil, errSyntax
	}
	return ParseObjectEncoding(args)
}

func TestHSetHGet(t *testing.T) {
	same(t,
		"HSET h a 1 b 2",
		"HSET h a 3 c ''",
		"HGET h a",
		"HGET h c",
		"HGET h missing",
		"HGET nokey a",
		"HMSET h x 1",
		"HSET h odd",
		"HMSET h odd",
		"SET s v",
		"HSET s a 1",
		"HGET s a",
		"HSET h a 1 a 2",
		"HGET h a",
		"OBJECT ENCODING h",
	)
}

func TestHashSmallCommands(t *testing.T) {
	same(t,
		"SET str v",
		"SADD set m",
		// HSETNX
		"HSETNX h a 1",
		"HSETNX h a 2",
		"HSETNX h b ''",
		"HGETALL h",
		"HSETNX str a 1",
		"HSETNX set a 1",
		// HMGET
		"HMGET h a b nope a",
		"HMGET nokey a b",
		"HMGET str a",
		"HMGET set a",
		// HEXISTS HLEN HSTRLEN
		"HEXISTS h a",
		"HEXISTS h nope",
		"HEXISTS nokey a",
		"HEXISTS str a",
		"HLEN h",
		"HLEN nokey",
		"HLEN str",
		"HLEN set",
		"HSTRLEN h a",
		"HSTRLEN h b",
		"HSTRLEN h nope",
		"HSTRLEN nokey a",
		"HSTRLEN str a",
		"HSET h n -12345 big 123456789012345678901234567890",
		"HSTRLEN h n",
		"HSTRLEN h big",
		// HKEYS HVALS HGETALL
		"HKEYS h",
		"HVALS h",
		"HGETALL h",
		"HKEYS nokey",
		"HVALS nokey",
		"HGETALL nokey",
		"HKEYS str",
		"HVALS set",
		"HGETALL str",
		"HGETALL set",
	)
}

// A small hash (a listpack to Redis) keeps the order fields were added in,
// through updates and removals.
func TestHashOrder(t *testing.T) {
	same(t,
		"HSET h a 1 b 2 c 3 d 4 e 5",
		"HDEL h b",
		"HGETALL h",
		"HSET h b 6 a 7",
		"HGETALL h",
		"HDEL h e a nope",
		"HKEYS h",
		"HVALS h",
		"HINCRBY h c 10",
		"HINCRBYFLOAT h z 1.5",
		"HGETALL h",
		"HSCAN h 0",
		"OBJECT ENCODING h",
	)
}

func TestHDel(t *testing.T) {
	same(t,
		"SET str v",
		"HSET h a 1 b 2 c 3",
		"HDEL h a a",
		"HDEL h nope",
		"HDEL h b c d",
		"HLEN h",
		"HGETALL h",
		"HDEL h a",
		"HDEL nokey a",
		"HDEL str a",
		"HSET h a 1",
		"DEL h",
		"HGET h a",
	)
}

func TestHashEncoding(t *testing.T) {
	long := strings.Repeat("x", 65)
	same(t,
		"HSET h a 1",
		"OBJECT ENCODING h",
		"HSET h f "+strings.Repeat("y", 64),
		"OBJECT ENCODING h",
		"HSET h f "+long,
		"OBJECT ENCODING h",
		"HDEL h f",
		"OBJECT ENCODING h",
		"HSET h2 "+long+" 1",
		"OBJECT ENCODING h2",
		fill("HSET h3", "f", 512, true),
		"OBJECT ENCODING h3",
		"HSET h3 one more",
		"OBJECT ENCODING h3",
		"HDEL h3 one f0 f1",
		"OBJECT ENCODING h3",
		// HINCRBY* convert as HSET does, on the field's length too.
		"HINCRBY h4 "+long+" 1",
		"OBJECT ENCODING h4",
		"HINCRBYFLOAT h5 f 1e70",
		"OBJECT ENCODING h5",
		"HSETNX h6 f "+long,
		"OBJECT ENCODING h6",
	)
}

// A hash Redis keeps in a hash table answers in its table's order: the
// tests compare those replies as sets.
func TestHashLarge(t *testing.T) {
	sameAs(t,
		fill("HSET h", "f", 600, true),
		"HLEN h",
		"HDEL h f1 f7 f100 f599",
		"HLEN h",
		"[sorted] HKEYS h",
		"[sorted] HVALS h",
		"[pairs] HGETALL h",
		"HMGET h f0 f1 f2",
		"HGET h f250",
		"[count] HRANDFIELD h 5",
		"[count] HRANDFIELD h -5 WITHVALUES",
		"[count] HRANDFIELD h 100",
		"[count] HRANDFIELD h 590",
		"[pairs] HRANDFIELD h 596 WITHVALUES",
		"[count] HRANDFIELD h",
	)
	sameScan(t, []string{fill("HSET h", "f", 1000, true)}, "HSCAN h CURSOR", true)
	sameScan(t, []string{fill("HSET h", "f", 1000, true)}, "HSCAN h CURSOR COUNT 7 MATCH f1*", true)
	sameScan(t, []string{fill("HSET h", "f", 1000, true)}, "HSCAN h CURSOR COUNT 1000", true)
}

func TestHIncrBy(t *testing.T) {
	same(t,
		"SET str v",
		"HINCRBY h n 5",
		"HINCRBY h n -7",
		"HGET h n",
		"HINCRBY h n 0",
		"HINCRBY nokey n -3",
		"HGETALL nokey",
		"HSET h s abc f 1.5 sp ' 1' z 007 e '' neg0 -0 big 9223372036854775808",
		"HINCRBY h s 1",
		"HINCRBY h f 1",
		"HINCRBY h sp 1",
		"HINCRBY h z 1",
		"HINCRBY h e 1",
		"HINCRBY h neg0 1",
		"HINCRBY h big 1",
		"HINCRBY h n x",
		"HINCRBY h n 1.0",
		"HINCRBY h n 9223372036854775808",
		"HINCRBY h n ''",
		"HSET h max 9223372036854775807 min -9223372036854775808",
		"HINCRBY h max 1",
		"HINCRBY h max 0",
		"HINCRBY h max -1",
		"HINCRBY h min -1",
		"HINCRBY h min 1",
		"HINCRBY h min -9223372036854775807",
		"HGETALL h",
		"HINCRBY str n 1",
		"HINCRBY str n x",
	)
}

func TestHIncrByFloat(t *testing.T) {
	sameAs(t,
		"SET str v",
		"HINCRBYFLOAT h f 1.1",
		"HINCRBYFLOAT h f 2.2",
		"HINCRBYFLOAT h f -3.3",
		"HINCRBYFLOAT h g 10.5",
		"HINCRBYFLOAT h g 0.1",
		"HINCRBYFLOAT h h 3.0e3",
		"HINCRBYFLOAT h h 1.1e-3",
		"HINCRBYFLOAT h i 0.000003814697265625",
		"HINCRBYFLOAT h i2 0.000003814697265625",
		"HINCRBYFLOAT h i2 0.000003814697265625",
		"HINCRBYFLOAT h j 5.0e300",
		"HINCRBYFLOAT h j 5.0e300",
		"HINCRBYFLOAT h k 1e4000",
		"HINCRBYFLOAT h l 1.18e4932",
		"HINCRBYFLOAT h l 1e4932",
		"HINCRBYFLOAT h m 1e-4950",
		"HINCRBYFLOAT h m -1e-4950",
		"HINCRBYFLOAT h n -0",
		"HINCRBYFLOAT h o 0x1.8p1",
		"HINCRBYFLOAT h o 0X10",
		"HINCRBYFLOAT h o .5",
		"HINCRBYFLOAT h o 5.",
		"HINCRBYFLOAT h o +1",
		"HINCRBYFLOAT h o 1E2",
		"HINCRBYFLOAT h p 123456789012345678901234567890",
		"HINCRBYFLOAT h p 0.12345678901234567890123",
		"HINCRBYFLOAT h q -5",
		"HINCRBYFLOAT h q 5",
		"HINCRBYFLOAT h r -1e-30",
		"[pairs] HGETALL h",
		// The increment's errors.
		"HINCRBYFLOAT h f abc",
		"HINCRBYFLOAT h f ''",
		"HINCRBYFLOAT h f ' 1'",
		"HINCRBYFLOAT h f '1 '",
		"HINCRBYFLOAT h f 1e",
		"HINCRBYFLOAT h f 1e+",
		"HINCRBYFLOAT h f 0x",
		"HINCRBYFLOAT h f 0x1p",
		"HINCRBYFLOAT h f 1_0",
		"HINCRBYFLOAT h f nan",
		"HINCRBYFLOAT h f -NaN",
		"HINCRBYFLOAT h f inf",
		"HINCRBYFLOAT h f -Infinity",
		"HINCRBYFLOAT h f +INF",
		"HINCRBYFLOAT h f 1e5000",
		"HINCRBYFLOAT h f 1e-5000",
		"HINCRBYFLOAT h f 0e-5000",
		"HINCRBYFLOAT h f 0x1p-20000",
		"HINCRBYFLOAT h f 0x1p20000",
		"HINCRBYFLOAT str f 1",
		"HINCRBYFLOAT str f x",
		"HINCRBYFLOAT str f inf",
		// The value's errors, and results out of range.
		"HSET h s abc sp ' 1' e '' in inf nn nan big 1.18e4932 hex 0x10 int 7",
		"HINCRBYFLOAT h s 1",
		"HINCRBYFLOAT h sp 1",
		"HINCRBYFLOAT h e 1",
		"HINCRBYFLOAT h in 1",
		"HINCRBYFLOAT h nn 1",
		"HINCRBYFLOAT h big 1e4932",
		"HINCRBYFLOAT h big -1",
		"HINCRBYFLOAT h hex 1",
		"HINCRBYFLOAT h int 0.5",
		"[pairs] HGETALL h",
	)
}

// HINCRBYFLOAT of random numbers, as redis-server computes them.
func TestHIncrByFloatRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	num := func() string {
		switch r.IntN(9) {
		case 0:
			return fmt.Sprint(r.IntN(2000) - 1000)
		case 1:
			return fmt.Sprintf("%.*f", r.IntN(20), (r.Float64()-0.5)*1000)
		case 2:
			return fmt.Sprintf("%g", (r.Float64()-0.5)*float64(r.IntN(1<<30)))
		case 3:
			return fmt.Sprintf("%.3e", r.NormFloat64()*1e10)
		case 4:
			return fmt.Sprintf("0.%d", r.Uint64())
		case 5:
			return fmt.Sprintf("%de%d", r.IntN(100), r.IntN(40)-20)
		case 6:
			return fmt.Sprintf("%d.%de%d", r.IntN(100), r.IntN(1000), r.IntN(800)-400)
		case 7:
			return fmt.Sprintf("-0x%x.%xp%d", r.IntN(1<<20), r.IntN(1<<12), r.IntN(200)-100)
		}
		return fmt.Sprintf("%d%018d", r.IntN(1000), r.Uint64()%1e18)
	}
	script := []string{}
	for i := range 400 {
		script = append(script, fmt.Sprintf("HINCRBYFLOAT h f%d %s", i%20, num()))
	}
	script = append(script, "[pairs] HGETALL h")
	sameAs(t, script...)
}

func TestHRandField(t *testing.T) {
	same(t,
		"SET str v",
		"HRANDFIELD nokey",
		"HRANDFIELD nokey 3",
		"HRANDFIELD nokey -3 WITHVALUES",
		"HRANDFIELD nokey 0",
		"HRANDFIELD str",
		"HRANDFIELD str 1",
		"HRANDFIELD nokey x",
		"HRANDFIELD nokey 1 withvalue",
		"HRANDFIELD nokey 1 WITHVALUES x",
		"HRANDFIELD nokey -9223372036854775808",
		"HRANDFIELD nokey -9223372036854775807",
		"HRANDFIELD nokey 9223372036854775808",
		"HRANDFIELD nokey -9223372036854770000 WITHVALUES",
		"HRANDFIELD nokey 4611686018427387904 WITHVALUES",
		"HRANDFIELD nokey 4611686018427387903 WITHVALUES",
		"HRANDFIELD nokey x WITHVALUES",
		"HSET one f v",
		"HRANDFIELD one",
		"HRANDFIELD one 1",
		"HRANDFIELD one 1 WITHVALUES",
		"HRANDFIELD one -3",
		"HRANDFIELD one -3 withvalues",
		"HRANDFIELD one 0",
		"HRANDFIELD one 0 WITHVALUES",
		"HSET h a 1 b 2 c 3 d 4",
		"HRANDFIELD h 4",
		"HRANDFIELD h 10 WITHVALUES",
		"HRANDFIELD h 9223372036854775807",
		"HDEL h b",
		"HRANDFIELD h 3 WITHVALUES",
		"HRANDFIELD str 0",
	)
	sameAs(t,
		"HSET h a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8 i 9 j 10",
		"[count] HRANDFIELD h",
		"[count] HRANDFIELD h 2",
		"[count] HRANDFIELD h 5 WITHVALUES",
		"[count] HRANDFIELD h 9",
		"[count] HRANDFIELD h -50 WITHVALUES",
		"[count] HRANDFIELD h -7",
	)
}

func TestHScan(t *testing.T) {
	same(t,
		"SET str v",
		"HSET h a 1 b 2 c 3 ab 4 '' 5",
		"HSCAN h 0",
		"HSCAN h 123",
		"HSCAN h 0 COUNT 1",
		"HSCAN h 0 MATCH a*",
		"HSCAN h 0 MATCH a* COUNT 2 MATCH b",
		"HSCAN h 0 MATCH ''",
		"HSCAN h 0 MATCH *",
		"HSCAN h 0 MATCH [ab]",
		"HSCAN h 0 COUNT 0",
		"HSCAN h 0 COUNT -1",
		"HSCAN h 0 COUNT x",
		"HSCAN h 0 COUNT",
		"HSCAN h 0 MATCH",
		"HSCAN h 0 TYPE hash",
		"HSCAN h 0 NOPE 1",
		"HSCAN h x",
		"HSCAN h -1",
		"HSCAN h +1",
		"HSCAN h ''",
		"HSCAN h ' 1'",
		"HSCAN h 18446744073709551615",
		"HSCAN h 18446744073709551616",
		"HSCAN h -18446744073709551615",
		"HSCAN h 1x",
		"HSCAN h -",
		"HSCAN nokey 0",
		"HSCAN nokey 0 COUNT 0",
		"HSCAN nokey x",
		"HSCAN str 0",
		"HSCAN str 0 COUNT 0",
		"HSCAN str x",
	)
}
