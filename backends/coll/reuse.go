package coll

import "github.com/pgcache/pgcache/backends"

// Reuse. A connection that pipelines one command on one key (the RESP
// front's runs, proxy/group.go) parses each request into the Op that the
// same command had at the same place of its previous run, once that run
// is answered: a run of sixteen LPOPs allocates no Op. The commands that
// pipelines send most (pushes and pops, SADD, HSET, HGET, ZADD) are
// reusable; any other is parsed into a new Op each time.

// reusable is an Op that its command can parse again in place.
type reusable interface {
	Command
	// parse reads a request of the op's command over whatever the op
	// held, keeping what the command's name fixes (LPOP's end).
	parse(args [][]byte) error
	// reset drops the request and the results, keeping what the name
	// fixes.
	reset()
}

// fresh parses args into op, new.
func fresh(op reusable, args [][]byte) (Command, error) { return parsed(op, op.parse(args)) }

// Reparse parses args, a request of the command that made op, into op,
// whose reply has been written. It returns false, having done nothing,
// when op cannot be reused: the caller parses a new one.
func Reparse(op backends.Op, args [][]byte) (ok bool, err error) {
	r, ok := op.(reusable)
	if !ok {
		return false, nil
	}
	return true, r.parse(args)
}

// Release drops what an answered Op holds (the request it borrowed, the
// values it answered) while it waits to be parsed into again.
func Release(op backends.Op) {
	if r, ok := op.(reusable); ok {
		r.reset()
	}
}
