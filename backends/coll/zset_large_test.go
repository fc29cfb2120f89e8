package coll

import (
	"strconv"
	"strings"
	"testing"
)

// Differential tests of sorted sets past the listpack limits, and of the
// encodings OBJECT ENCODING reports.

// bigScript makes a sorted set of n members, past the listpack limits, with
// ties and infinities.
func bigScript(key string, n int) []string {
	var lines []string
	line := "ZADD " + key
	for i := range n {
		score := strconv.Itoa(i % 37)
		switch i % 50 {
		case 7:
			score = "-inf"
		case 8:
			score = "+inf"
		case 9:
			score = strconv.FormatFloat(float64(i)/7, 'g', -1, 64)
		}
		line += " " + score + " m" + strconv.Itoa(i*7919%1000)
		if i%40 == 39 {
			lines = append(lines, line)
			line = "ZADD " + key
		}
	}
	if line != "ZADD "+key {
		lines = append(lines, line)
	}
	return lines
}

func TestZSetLarge(t *testing.T) {
	script := bigScript("big", 300)
	script = append(script, bigScript("big2", 150)...)
	script = append(script,
		"ZCARD big",
		"ZRANGE big 0 -1 WITHSCORES",
		"ZRANGE big 100 120 REV WITHSCORES",
		"ZRANGE big -150 -140",
		"ZRANGEBYSCORE big 3 (9 WITHSCORES LIMIT 5 20",
		"ZREVRANGEBYSCORE big +inf 30 WITHSCORES LIMIT 2 7",
		"ZRANGEBYSCORE big (-inf 0",
		"ZCOUNT big 5 10",
		"ZCOUNT big -inf +inf",
		"ZCOUNT big (-inf (+inf",
		"ZRANK big m0",
		"ZREVRANK big m0",
		"ZRANK big m919",
		"ZSCORE big m919",
		"ZMSCORE big m0 m919 nope",
		"ZUNION 2 big big2 WITHSCORES",
		"ZINTER 2 big big2 WEIGHTS 2 -1 AGGREGATE MIN WITHSCORES",
		"ZDIFF 2 big big2 WITHSCORES",
		"ZINTERCARD 2 big big2 LIMIT 17",
		"ZUNIONSTORE u 2 big big2 AGGREGATE MAX",
		"ZRANGE u 0 -1 WITHSCORES",
		"ZRANGESTORE r big 10 200",
		"ZRANGE r 0 -1 WITHSCORES",
		"ZRANDMEMBER big 1000 WITHSCORES",
		"ZPOPMIN big 5",
		"ZPOPMAX big 5",
		"ZREMRANGEBYRANK big 10 30",
		"ZREMRANGEBYSCORE big 20 (25",
		"ZRANGE big 0 -1 WITHSCORES",
		"ZMPOP 1 big MAX COUNT 100",
		"ZRANGE big 0 -1 WITHSCORES",
	)
	same(t, script...)
	var lex []string
	line := "ZADD lex"
	for i := range 300 {
		line += " 0 " + strconv.Itoa(i*7919%1000)
	}
	lex = append(lex, line,
		"ZRANGEBYLEX lex - +",
		"ZRANGEBYLEX lex [2 (5 LIMIT 3 40",
		"ZREVRANGEBYLEX lex (9 [1 LIMIT 3 40",
		"ZLEXCOUNT lex [2 (5",
		"ZLEXCOUNT lex - +",
		"ZREMRANGEBYLEX lex [3 [4",
		"ZRANGE lex - + BYLEX",
		"ZRANGESTORE d lex [5 + BYLEX",
		"ZRANGE d 0 -1 WITHSCORES",
	)
	same(t, lex...)
}

func TestZSetLargeNegativeZero(t *testing.T) {
	script := bigScript("big", 200)
	script = append(script,
		"ZADD big -0 zero 5 five",
		"ZADD big -0 five",
		"ZSCORE big zero",
		"ZSCORE big five",
		"ZRANGESTORE byrank big 0 -1",
		"ZSCORE byrank zero",
		"ZRANGESTORE byscore big -inf +inf BYSCORE",
		"ZSCORE byscore zero",
		"ZRANGESTORE few big (-1 (1 BYSCORE",
		"ZSCORE few zero",
		"ZUNIONSTORE u 1 big",
		"ZSCORE u zero",
		"ZINTERSTORE i 1 few",
		"ZSCORE i zero",
	)
	same(t, script...)
}

// sameEncoding runs a script against redis-server and through the Ops, and
// compares OBJECT ENCODING of keys with Encoding.
func sameEncoding(t *testing.T, keys []string, script ...string) {
	t.Helper()
	rc := dialRedis(t, 2)
	d := newDB()
	for _, line := range script {
		rc.do(t, Args(line))
		d.do(2, Args(line))
	}
	for _, k := range keys {
		reply := string(rc.do(t, Args("OBJECT ENCODING "+k)))
		_, want, _ := strings.Cut(strings.TrimSuffix(reply, "\r\n"), "\r\n") // a bulk
		z, _ := d.vals[k].(*ZSet)
		if z == nil {
			t.Fatalf("%s: no sorted set; redis says %q", k, want)
		}
		if got := z.Encoding(&DefaultLimits); got != want {
			t.Errorf("%s: encoding %q, want %q", k, got, want)
		}
	}
}

func TestZSetEncoding(t *testing.T) {
	long := strings.Repeat("x", 65)
	script := append(bigScript("big", 129),
		"ZADD small 1 a 2 b",
		"ZADD edge "+strings.Repeat("y", 64)+" 1",
		"ZADD edge 1 "+strings.Repeat("y", 64),
		"ZADD longm 1 "+long,
		"ZADD shrunk 1 "+long,
		"ZREM shrunk "+long,
		"ZADD shrunk 1 a",
		"ZUNIONSTORE u 1 small",
		"ZUNIONSTORE u2 1 big",
		"ZRANGESTORE r big 0 10",
		"ZRANGESTORE r2 big 0 -1",
		"ZINTERSTORE i 2 big big",
		"ZDIFFSTORE df 1 longm",
	)
	sameEncoding(t, []string{"big", "small", "edge", "longm", "shrunk", "u", "u2", "r", "r2", "i", "df"}, script...)
}
