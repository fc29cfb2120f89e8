package coll

import "testing"

func init() {
	parsers["hset"] = ParseHSet
	parsers["hmset"] = ParseHSet
	parsers["hget"] = ParseHGet
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
		"SET s v",
		"HSET s a 1",
		"HGET s a",
	)
}
