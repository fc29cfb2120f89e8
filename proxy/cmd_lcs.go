package proxy

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
//
// Redis 7's longest common subsequence of two values, with its reply
// shapes: the subsequence, its length (LEN), or the matching ranges from
// the end backwards (IDX). Both keys must be on one route.
func cmdLCS(c *conn, args [][]byte) {
	var getLen, getIdx, withLen bool
	var minLen int64
	for i := 3; i < len(args); i++ {
		switch {
		case is(args[i], "len"):
			getLen = true
		case is(args[i], "idx"):
			getIdx = true
		case is(args[i], "withmatchlen"):
			withLen = true
		case is(args[i], "minmatchlen") && i+1 < len(args):
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			minLen = max(n, 0)
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if getIdx && getLen {
		c.writeError("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	vals, ok := c.mget(args[1:3])
	if !ok {
		return
	}
	a, b := vals[0], vals[1]
	defer c.clearScratch()
	if (int64(len(a))+1)*(int64(len(b))+1)*4 > c.s.config().MaxBulkBytes {
		c.writeError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	lcsReply(c, a, b, getLen, getIdx, withLen, minLen)
}

// lcsReply computes the table of LCS lengths and walks it back as Redis's
// lcsCommand does, so ranges come out in the same order and shape.
func lcsReply(c *conn, a, b []byte, getLen, getIdx, withLen bool, minLen int64) {
	alen, blen := len(a), len(b)
	w := blen + 1
	dp := make([]uint32, (alen+1)*w)
	at := func(i, j int) uint32 { return dp[i*w+j] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				dp[i*w+j] = at(i-1, j-1) + 1
			} else {
				dp[i*w+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	total := at(alen, blen)
	if getLen {
		c.writeInt(int64(total))
		return
	}
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1, n int }
	var matches []match
	idx := int(total)
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0 // aStart == alen: no range yet
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case aStart == alen:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart--
				bStart--
			default:
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			if aStart != alen {
				emit = true
			}
		}
		if emit {
			n := aEnd - aStart + 1
			if minLen == 0 || int64(n) >= minLen {
				matches = append(matches, match{aStart, aEnd, bStart, bEnd, n})
			}
			aStart = alen
		}
	}
	if !getIdx {
		c.writeBulk(result)
		return
	}
	c.writeMap(2)
	c.writeBulkString("matches")
	c.writeArray(len(matches))
	for _, m := range matches {
		if withLen {
			c.writeArray(3)
		} else {
			c.writeArray(2)
		}
		c.writeArray(2)
		c.writeInt(int64(m.a0))
		c.writeInt(int64(m.a1))
		c.writeArray(2)
		c.writeInt(int64(m.b0))
		c.writeInt(int64(m.b1))
		if withLen {
			c.writeInt(int64(m.n))
		}
	}
	c.writeBulkString("len")
	c.writeInt(int64(total))
}
