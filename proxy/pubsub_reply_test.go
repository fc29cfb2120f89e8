package proxy

import "testing"

// TestSubscribeUnderReplyOff: CLIENT REPLY OFF drops replies, but not a
// SUBSCRIBE's or UNSUBSCRIBE's confirmations, in RESP2 and RESP3, as Redis
// pushes them whatever CLIENT REPLY says (unit/pubsub's "PubSub messages
// with CLIENT REPLY OFF", which waited for them forever).
func TestSubscribeUnderReplyOff(t *testing.T) {
	ts := startServer(t, Config{})
	for _, tc := range []struct {
		proto, sub, psub, unsub string
	}{
		{"2", "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "*3\r\n$10\r\npsubscribe\r\n$3\r\nc*x\r\n:2\r\n", "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n"},
		{"3", ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", ">3\r\n$10\r\npsubscribe\r\n$3\r\nc*x\r\n:2\r\n", ">3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n"},
	} {
		c := dial(t, ts.addr)
		c.do("HELLO", tc.proto)
		c.send(encode("CLIENT", "REPLY", "OFF"))
		if got := c.do("SUBSCRIBE", "ch"); got != tc.sub {
			t.Errorf("RESP%s SUBSCRIBE under CLIENT REPLY OFF: %q, want %q", tc.proto, got, tc.sub)
		}
		if got := c.do("PSUBSCRIBE", "c*x"); got != tc.psub {
			t.Errorf("RESP%s PSUBSCRIBE under CLIENT REPLY OFF: %q, want %q", tc.proto, got, tc.psub)
		}
		if got := c.do("UNSUBSCRIBE", "ch"); got != tc.unsub {
			t.Errorf("RESP%s UNSUBSCRIBE under CLIENT REPLY OFF: %q, want %q", tc.proto, got, tc.unsub)
		}
	}
}
