package proxy

import "sync"

// Test-only commands, registered by startServer: they reach into the
// connection loop in ways no real command should.
var (
	testCommandsOnce sync.Once
	// debugBlock is where DEBUG-BLOCK waits: it sends on entered, then
	// waits on release, or for the server to give up on it, as a backend
	// call would.
	debugBlock struct {
		entered chan struct{}
		release chan struct{}
	}
)

func registerTestCommands() {
	testCommandsOnce.Do(func() {
		debugBlock.entered = make(chan struct{}, 16)
		debugBlock.release = make(chan struct{})
		register(commands, "", spec{name: "debug-panic", kind: kindAdmin, arity: 1,
			fn: func(c *conn, _ [][]byte) { panic("debug-panic") }})
		register(commands, "", spec{name: "debug-block", kind: kindAdmin, arity: 1,
			fn: func(c *conn, _ [][]byte) {
				debugBlock.entered <- struct{}{}
				select {
				case <-debugBlock.release:
					c.writeOK()
				case <-c.s.ctx.Done(): // as a backend call gives up
					c.writeError("ERR canceled")
				}
			}})
	})
}
