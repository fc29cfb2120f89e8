package coll

import (
	"fmt"
	"strings"
	"testing"
)

func init() {
	parsers["sadd"] = ParseSAdd
	parsers["srem"] = ParseSRem
	parsers["smembers"] = ParseSMembers
	parsers["sismember"] = ParseSIsMember
	parsers["smismember"] = ParseSIsMember
	parsers["scard"] = ParseSCard
	parsers["spop"] = ParseSPop
	parsers["srandmember"] = ParseSRandMember
	parsers["smove"] = ParseSMove
	parsers["sinter"] = ParseSInter
	parsers["sintercard"] = ParseSInterCard
	parsers["sinterstore"] = ParseSInterStore
	parsers["sunion"] = ParseSUnion
	parsers["sunionstore"] = ParseSUnionStore
	parsers["sdiff"] = ParseSDiff
	parsers["sdiffstore"] = ParseSDiffStore
	parsers["sscan"] = ParseSScan
}

// ints is a command that adds the integers from..to-1, in a shuffled
// order: "SADD s" 0 3 is SADD s 2 0 1, say.
func ints(cmd string, from, to int) string {
	var b strings.Builder
	b.WriteString(cmd)
	n := to - from
	for i := range n {
		fmt.Fprintf(&b, " %d", from+(i*7919)%n)
	}
	return b.String()
}

func TestSetSmallCommands(t *testing.T) {
	same(t,
		"SET str v",
		"HSET hash f v",
		// SADD, SREM, SCARD
		"SADD s 3 1 2 3 -5 10",
		"SADD s 2",
		"SCARD s",
		"SMEMBERS s",
		"OBJECT ENCODING s",
		"SREM s 2 nope 2",
		"SMEMBERS s",
		"SREM s 1 3 -5 10",
		"SCARD s",
		"SMEMBERS s",
		"SREM s 1",
		"SREM nokey a",
		"SCARD nokey",
		"SMEMBERS nokey",
		"SADD str a",
		"SREM str a",
		"SCARD str",
		"SMEMBERS str",
		"SADD hash a",
		"SMEMBERS hash",
		// SISMEMBER, SMISMEMBER
		"SADD t a b 1",
		"SISMEMBER t a",
		"SISMEMBER t c",
		"SISMEMBER t 1",
		"SISMEMBER t 01",
		"SISMEMBER nokey a",
		"SISMEMBER str a",
		"SMISMEMBER t a c 1 b a",
		"SMISMEMBER nokey a b",
		"SMISMEMBER str a",
		"SMISMEMBER hash a",
		// The empty member, and members with spaces.
		"SADD e '' 'a b'",
		"SISMEMBER e ''",
		"SCARD e",
	)
}

// An intset answers in ascending numeric order; a member that is no
// canonical int64 makes a set a hash table.
func TestSetIntsetOrder(t *testing.T) {
	sameAs(t,
		"SADD s 100 -3 7 0 -100 9223372036854775807 -9223372036854775808 42 5 -1 10 99 1000",
		"SMEMBERS s",
		"OBJECT ENCODING s",
		"SSCAN s 0",
		"SSCAN s 0 MATCH *0",
		"SSCAN s 0 MATCH -*",
		"SRANDMEMBER s 100",
		"SRANDMEMBER s 13",
		"SINTER s s",
		"SUNION s",
		"SDIFF s nokey",
		"SADD s2 7 5 -3 8",
		"SINTER s s2",
		"SINTER s2 s",
		"SUNION s2 s",
		"SDIFF s s2",
		"SDIFF s2 s",
		"SINTERSTORE d s s2",
		"SMEMBERS d",
		"OBJECT ENCODING d",
		// Of sets of one size, SINTER walks the first named.
		"SADD i3 3 1 2",
		"SADD w3 2 x 1",
		"SINTER i3 w3",
		"SINTER i3 w3 s",
		"SINTERCARD 2 w3 i3",
		// Numbers an intset does not hold.
		"SADD n 007",
		"OBJECT ENCODING n",
		"SADD n2 -0",
		"OBJECT ENCODING n2",
		"SADD n3 9223372036854775808",
		"OBJECT ENCODING n3",
		"SADD n4 +1",
		"OBJECT ENCODING n4",
		"SADD n5 ' 1'",
		"OBJECT ENCODING n5",
		"SADD n6 1.0",
		"OBJECT ENCODING n6",
		// A set of integers that once held another member is a hash table.
		"SADD h 3 x 1 2",
		"SREM h x",
		"OBJECT ENCODING h",
		"[sorted] SMEMBERS h",
		// ...but a set made of its members is an intset again.
		"SUNION h",
		"SUNIONSTORE hu h",
		"OBJECT ENCODING hu",
		"SMEMBERS hu",
		"[sorted] SINTER h h",
		"[sorted] SINTER h",
		"SINTERSTORE hi h h",
		"OBJECT ENCODING hi",
		"SMEMBERS hi",
		"SDIFF h nokey",
		"SDIFFSTORE hd h s",
		"OBJECT ENCODING hd",
		"SMEMBERS hd",
		"[sorted] SRANDMEMBER h 10",
		"SPOP h 3",
		"EXISTS h",
	)
}

// A set of more than set-max-intset-entries (512) integers is a hash table,
// for good; results built from several sets follow the same rules.
func TestSetIntsetLimit(t *testing.T) {
	sameAs(t,
		ints("SADD s", 0, 512),
		"OBJECT ENCODING s",
		"SMEMBERS s",
		"SADD s 512",
		"OBJECT ENCODING s",
		"[sorted] SMEMBERS s",
		"SREM s 0 1 2 3 4 5",
		"OBJECT ENCODING s",
		"SCARD s",
		"[sorted] SMEMBERS s",
		ints("SADD a", 0, 300),
		ints("SADD b", 250, 550),
		"[sorted] SUNION a b",
		"SUNIONSTORE u a b",
		"OBJECT ENCODING u",
		"SCARD u",
		"SINTER a b",
		"SINTERSTORE i a b",
		"OBJECT ENCODING i",
		"SDIFF a b",
		"SDIFFSTORE d a b",
		"OBJECT ENCODING d",
		"SMEMBERS d",
		// SDIFF's second algorithm copies the first set, then removes: a
		// first set of more than 512 members makes a hash table, even
		// when what is left is small.
		ints("SADD big", 0, 600),
		ints("SADD most", 3, 600),
		"[sorted] SDIFF big most",
		"SDIFFSTORE d2 big most",
		"OBJECT ENCODING d2",
		"SDIFFSTORE d3 big most a b",
		"OBJECT ENCODING d3",
		"SDIFFSTORE d4 a most",
		"OBJECT ENCODING d4",
		"SDIFF a most",
	)
}

func TestSetLarge(t *testing.T) {
	sameAs(t,
		fill("SADD s", "m", 1000, false),
		"SCARD s",
		"SREM s m1 m7 m999 m500",
		"SCARD s",
		"[sorted] SMEMBERS s",
		"SISMEMBER s m2",
		"SMISMEMBER s m1 m2 m3",
		fill("SADD t", "m", 20, false),
		"[sorted] SINTER s t",
		"[sorted] SINTER t s",
		"SINTERCARD 2 s t",
		"SINTERCARD 2 s t LIMIT 5",
		"[sorted] SDIFF t s",
		"SDIFFSTORE d t s",
		"[sorted] SMEMBERS d",
		"OBJECT ENCODING d",
		"SUNIONSTORE u s t",
		"SCARD u",
		"[count] SRANDMEMBER s 5",
		"[count] SRANDMEMBER s -5",
		"[count] SRANDMEMBER s 400",
		"[count] SRANDMEMBER s",
		"[count] SPOP s",
		"SCARD s",
		"[count] SPOP s 10",
		"SCARD s",
		"[count] SPOP s 900",
		"SCARD s",
		"[count] SPOP s 900",
		"SCARD s",
	)
	sameScan(t, []string{fill("SADD s", "m", 1000, false)}, "SSCAN s CURSOR", false)
	sameScan(t, []string{fill("SADD s", "m", 1000, false)}, "SSCAN s CURSOR COUNT 3 MATCH m9*", false)
	sameScan(t, []string{ints("SADD s", 0, 2000)}, "SSCAN s CURSOR COUNT 100", false)
}

func TestSMove(t *testing.T) {
	sameAs(t,
		"SET str v",
		"SADD src a b 1",
		"SADD dst c",
		"SMOVE src dst a",
		"[sorted] SMEMBERS dst",
		"SMOVE src dst nope",
		"SMOVE src src b",
		"SMOVE src src nope",
		"SMOVE src new 1",
		"SMEMBERS new",
		"OBJECT ENCODING new",
		"SMOVE src dst b",
		"SMEMBERS src",
		"SMOVE nokey dst a",
		"SMOVE nokey str a",
		"SMOVE str dst a",
		"SMOVE dst str c",
		"SMOVE dst str nope",
		"SMOVE dst dst c",
		"SADD dst2 c",
		"SMOVE dst dst2 c",
		"[sorted] SMEMBERS dst2",
		"SCARD dst",
		"SADD i 1 2",
		"SMOVE dst2 i c",
		"OBJECT ENCODING i",
	)
}

func TestSetAlgebra(t *testing.T) {
	sameAs(t,
		"SET str v",
		"HSET hash f v",
		"SADD a 1 2 3 4",
		"SADD b 3 4 5",
		"SADD c 4 5 6",
		"SADD x p q 4",
		"SINTER a b",
		"SINTER a b c",
		"SINTER a b nokey",
		"SINTER nokey a",
		"SINTER nokey",
		"SINTER a str",
		"SINTER nokey str",
		"SINTER a hash",
		"SINTER a x",
		"SINTER x a",
		"SINTERCARD 1 a",
		"SINTERCARD 2 a b",
		"SINTERCARD 3 a b c",
		"SINTERCARD 2 a nokey",
		"SINTERCARD 2 a str",
		"SINTERCARD 1 a LIMIT 2",
		"SINTERCARD 1 a LIMIT 0",
		"SINTERCARD 1 a limit 10",
		"SINTERCARD 1 a LIMIT 1 LIMIT 3",
		"SINTERCARD 0 a",
		"SINTERCARD -1 a",
		"SINTERCARD x a",
		"SINTERCARD 3 a b",
		"SINTERCARD 1 a LIMIT",
		"SINTERCARD 1 a LIMIT -1",
		"SINTERCARD 1 a LIMIT x",
		"SINTERCARD 1 a NOPE 1",
		"SINTERCARD 1 nokey LIMIT x",
		"SINTERCARD 2 a b c",
		"SINTERSTORE d a b",
		"SMEMBERS d",
		"SINTERSTORE d a nokey",
		"EXISTS d",
		"SINTERSTORE str a b",
		"SMEMBERS str",
		"SET str v",
		"SINTERSTORE str nokey",
		"EXISTS str",
		"SET str v",
		"SINTERSTORE d a str",
		"SINTERSTORE a a b",
		"SMEMBERS a",
		"SADD a 1 2",
		"SUNION a b c",
		"SUNION nokey",
		"SUNION a nokey",
		"SUNION a str",
		"SUNION nokey hash",
		"[sorted] SUNION a x",
		"SUNIONSTORE d a b",
		"SMEMBERS d",
		"SUNIONSTORE d nokey",
		"EXISTS d",
		"SUNIONSTORE d a str",
		"SUNIONSTORE hash a",
		"SMEMBERS hash",
		"SUNIONSTORE a a c",
		"SMEMBERS a",
		"SDIFF a b",
		"SDIFF a b c",
		"SDIFF a nokey",
		"SDIFF nokey a",
		"SDIFF a a",
		"SDIFF a b a",
		"SDIFF a str",
		"SDIFF nokey str",
		"[sorted] SDIFF x a",
		"SDIFFSTORE d a b",
		"SMEMBERS d",
		"SDIFFSTORE d a a",
		"EXISTS d",
		"SDIFFSTORE d a str",
		"SDIFFSTORE str a b",
		"SMEMBERS str",
		"SDIFFSTORE a a b",
		"SMEMBERS a",
		"SDIFFSTORE b b",
		"SMEMBERS b",
	)
}

func TestSPop(t *testing.T) {
	sameAs(t,
		"SET str v",
		"SPOP nokey",
		"SPOP nokey 3",
		"SPOP nokey 0",
		"SPOP str",
		"SPOP str 1",
		"SPOP nokey -1",
		"SPOP nokey x",
		"SPOP nokey 1 2",
		"SPOP str -1",
		"SADD one a",
		"SPOP one",
		"EXISTS one",
		"SADD s 5 3 1",
		"SPOP s 0",
		"SCARD s",
		"SPOP s 3",
		"EXISTS s",
		"SADD s 5 3 1 x",
		"[sorted] SPOP s 10",
		"SADD s 9 8 7",
		"SREM s 8",
		"SPOP s 9223372036854775807",
	)
	sameAs(t,
		"SADD s 1 2 3 4 5 6 7 8 9 10",
		"[count] SPOP s",
		"SCARD s",
		"[count] SPOP s 1",
		"SCARD s",
		"[count] SPOP s 7",
		"SCARD s",
		"OBJECT ENCODING s",
	)
}

func TestSRandMember(t *testing.T) {
	same(t,
		"SET str v",
		"SRANDMEMBER nokey",
		"SRANDMEMBER nokey 3",
		"SRANDMEMBER nokey -3",
		"SRANDMEMBER nokey 0",
		"SRANDMEMBER str",
		"SRANDMEMBER str 0",
		"SRANDMEMBER nokey x",
		"SRANDMEMBER nokey 1 2",
		"SRANDMEMBER nokey -9223372036854775808",
		"SRANDMEMBER nokey 9223372036854775808",
		"SRANDMEMBER str x",
		"SADD one a",
		"SRANDMEMBER one",
		"SRANDMEMBER one 1",
		"SRANDMEMBER one -4",
		"SRANDMEMBER one 0",
		"SADD s 5 3 1",
		"SRANDMEMBER s 3",
		"SRANDMEMBER s 9223372036854775807",
	)
	sameAs(t,
		"SADD s a b c d e f g h i j",
		"[count] SRANDMEMBER s",
		"[count] SRANDMEMBER s 2",
		"[count] SRANDMEMBER s 9",
		"[count] SRANDMEMBER s -30",
		"[sorted] SRANDMEMBER s 10",
		"SCARD s",
	)
}

func TestSScan(t *testing.T) {
	same(t,
		"SET str v",
		"SADD s 3 1 2 30",
		"SSCAN s 0",
		"SSCAN s 7",
		"SSCAN s 0 COUNT 1",
		"SSCAN s 0 MATCH 3*",
		"SSCAN s 0 MATCH ''",
		"SSCAN s 0 COUNT 0",
		"SSCAN s 0 TYPE set",
		"SSCAN s x",
		"SSCAN nokey 0",
		"SSCAN nokey 0 COUNT 0",
		"SSCAN str 0",
		"SSCAN str 0 COUNT 0",
		"SADD e ''",
		"SSCAN e 0 MATCH ''",
	)
}
