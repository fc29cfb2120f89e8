//go:build !unix

package proxy

// rawConn is empty where pgcache has no non-blocking writes: a batch's
// replies are pushed with waiting writes, so a client that does not read
// holds its connection until WriteTimeout instead of being disconnected.
type rawConn struct{}

func (c *conn) initRaw() {}

func (c *conn) writeNow(p []byte) (int, error) { return c.writeWaiting(p) }

func (c *conn) nonBlocking() bool { return false }

func (c *conn) run() error { return c.runConn() }

// peerGone: without a descriptor to peek, a blocked client is let go by
// its timeout, CLIENT KILL or shutdown.
func (c *conn) peerGone() bool { return false }
