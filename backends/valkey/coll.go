package valkey

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Collections on a Valkey route: the server has hashes, sets, sorted sets
// and lists itself, so a client's request (an Op that is
// backends.Passable) is sent to it as it came, its keys named as the route
// stores them ("<route>:<key>", or as they are with raw_keys), and the
// server's reply is handed back as it came (Passed.Reply), errors
// included: WRONGTYPE or a syntax error is the client's answer, not a
// failure of the store. A failure to reach the server, or a server that
// cannot serve now (LOADING, OOM, … as for strings: errors.go), is the
// store's error. The reply does not say which keys the command emptied or
// made, so a request passed on marks none (backends.MarkEmptied,
// MarkCreated): the RESP front sends no "del" or "new" for them. (An
// atomic run's commands run on a copy, package snapshot, which marks.)
//
// The protocol. valkey-go speaks RESP3, so a client speaking RESP2 is
// served through a second client made with AlwaysRESP2 (resp2.go): the
// server then answers in RESP2's shapes (ZRANGE … WITHSCORES flat, HGETALL
// an array), which the RESP front writes as they are.
//
// Multi-key commands (SINTERSTORE, SMOVE, LMOVE, ZUNIONSTORE…) go as one
// command. In a cluster the server refuses keys of different hash slots;
// a route's keys share a slot only when the application used hash tags
// ("{user42}:a", "{user42}:b": the tag inside the route's namespace still
// decides the slot), as it must against a Redis Cluster. Do answers such a
// request with the server's own refusal (CROSSSLOT Keys in request don't
// hash to the same slot) without sending it: valkey-go cannot send a
// command whose keys are in different slots.
//
// Blocking commands (BLPOP, BZPOPMIN, BLMOVE…) are passed on too. valkey-go
// sends them on connections of their own (its blocking pool, up to
// BlockingPoolSize, 1024 by default, per node), never on the pipelined
// connections other requests share, so a blocked client holds up nobody
// but itself; and without command_timeout: the server's own timeout ends
// the wait (bounded here by the command's timeout plus command_timeout,
// should the server never answer). When the caller's context ends (its
// client disconnected), the wait ends at once: valkey-go unblocks the
// server's client (CLIENT UNBLOCK) and reuses its connection, or closes it
// when it may not. As in Redis, an element the server popped just before
// is then lost with the reply nobody reads.
//
// A reply that names a key (BLPOP's, LMPOP's, BZPOPMIN's, ZMPOP's) names
// it as the client did, not as the route stores it.
//
// Writes fence the keys they may write in the client cache (clientcache.go)
// once the server replied, as the store's string writes do: a GET never
// serves a string that SINTERSTORE, say, replaced. Reads are not tracked
// by the server (only the client cache's GETs are), so under CLIENT
// TRACKING they are marked backends.ReadNotWatched, as EXISTS is.

// blockingCommands are the commands that wait for their keys.
var blockingCommands = map[string]bool{
	"blpop": true, "brpop": true, "blmove": true, "brpoplpush": true, "blmpop": true,
	"bzpopmin": true, "bzpopmax": true, "bzmpop": true,
}

// crossSlot is the server's refusal of keys in different hash slots.
var crossSlot = backends.Reply{Kind: backends.ReplyError, Str: []byte(errCrossSlot)}

// Do passes a client's request on to the server and sets its reply
// (backends.Passed.Reply). An Op that is not a client's request is not
// supported (yet): ErrUnsupported.
func (s *Store) Do(ctx context.Context, keys []string, op backends.Op) error {
	p, ok := op.(backends.Passable)
	if !ok {
		return backends.ErrUnsupported
	}
	req := p.Request()
	name := op.Name()
	req.Reply = backends.Reply{}
	if err := checkRequest(req, keys); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !layoutOK {
		return fmt.Errorf("%s: %w", name, errMessageLayout)
	}
	cctx, done, c, err := s.d.begin(ctx, name)
	if err != nil {
		return err
	}
	defer done()
	if req.RESP == 2 {
		if c, err = s.d.resp2(cctx, ctx, name); err != nil {
			return err
		}
	}
	tokens, ks := s.request(req, keys)
	if c.cluster && !sameSlot(ks) {
		req.Reply = crossSlot
		return nil
	}
	writes := op.Writes()
	_, blocker := op.(coll.Blocker)
	kind := cmdWrite
	switch {
	case blocker || blockingCommands[name]:
		var cancel context.CancelFunc
		cctx, cancel = s.blockingContext(ctx, op)
		defer cancel()
		kind = cmdBlocking
	case writes == backends.ReadOnly:
		kind = cmdRead
	}
	cmd := build(c, tokens, req.KeyAt, kind)
	if writes == backends.ReadOnly {
		// A collection read is not one the client cache tracks (it
		// holds strings): its readers drop what it served.
		s.d.cache.unwatched(s.prefix, keys...)
	}
	res := c.Do(cctx, cmd)
	switch writes {
	case backends.WritesAll:
		s.written(ks...)
	case backends.WritesFirst:
		s.written(ks[:min(1, len(ks))]...)
	}
	if err := res.NonValkeyError(); err != nil {
		return s.d.fail(ctx, name, err)
	}
	m, _ := res.ToMessage()
	if f := fields(&m); f.typ == respSimpleErr || f.typ == respBlobErr {
		code, _, _ := strings.Cut(string(f.str()), " ")
		if unavailableCodes[code] {
			return s.d.fail(ctx, name, m.Error())
		}
	}
	req.Reply = toReply(&m)
	if namesKey[name] {
		clientKey(&req.Reply, req, ks)
	}
	return nil
}

// namesKey are the commands whose reply names the key they popped from,
// first in an array: BLPOP's [key, element], LMPOP's [key, [elements]],
// BZPOPMIN's [key, member, score], ZMPOP's [key, [[member, score]…]].
var namesKey = map[string]bool{
	"blpop": true, "brpop": true, "lmpop": true, "blmpop": true,
	"bzpopmin": true, "bzpopmax": true, "zmpop": true, "bzmpop": true,
}

// clientKey names the key in such a reply as the client did: the server
// named it as the route stores it (ks), with the route's namespace. The
// name is copied: the request is only borrowed for the call.
func clientKey(r *backends.Reply, req *backends.Passed, ks []string) {
	if r.Kind != backends.ReplyArray || len(r.Elems) == 0 || r.Elems[0].Kind != backends.ReplyBulk {
		return
	}
	for i, k := range ks {
		if string(r.Elems[0].Str) == k {
			r.Elems[0].Str = bytes.Clone(req.Args[req.KeyAt[i]])
			return
		}
	}
}

// checkRequest checks that the request names as many keys as Do has, each
// at an argument after the command's name.
func checkRequest(req *backends.Passed, keys []string) error {
	if len(req.Args) == 0 {
		return fmt.Errorf("a request without a command")
	}
	if len(req.KeyAt) != len(keys) {
		return fmt.Errorf("%d keys for %d key arguments", len(keys), len(req.KeyAt))
	}
	for _, at := range req.KeyAt {
		if at <= 0 || at >= len(req.Args) {
			return fmt.Errorf("key argument %d of %d", at, len(req.Args))
		}
	}
	return nil
}

// request returns the request's arguments as strings, each key (at
// KeyAt) named as the server stores it, and those keys in Do's order.
// The arguments are copied (valkey-go may still be writing the command
// after a call that timed out returns, while the request is only borrowed
// for the call), into one allocation.
func (s *Store) request(req *backends.Passed, keys []string) (tokens, ks []string) {
	keyOf := make([]int, len(req.Args)) // argument -> 1 + index in keys; 0: not a key
	n := 0
	for i, at := range req.KeyAt {
		keyOf[at] = i + 1
		n += len(s.prefix) + len(keys[i])
	}
	for j, a := range req.Args {
		if keyOf[j] == 0 {
			n += len(a)
		}
	}
	var b strings.Builder
	b.Grow(n)
	ends := keyOf // reused: the end of each argument in b
	for j, a := range req.Args {
		if i := keyOf[j]; i > 0 {
			b.WriteString(s.prefix)
			b.WriteString(keys[i-1])
		} else {
			b.Write(a)
		}
		ends[j] = b.Len()
	}
	all := b.String()
	tokens = make([]string, len(req.Args))
	start := 0
	for j := range tokens {
		tokens[j], start = all[start:ends[j]], ends[j]
	}
	ks = make([]string, len(req.KeyAt))
	for i, at := range req.KeyAt {
		ks[i] = tokens[at]
	}
	return tokens, ks
}

// What valkey-go is told of a command passed on.
const (
	cmdWrite    = iota // sent once, never retried (it may have been applied)
	cmdRead            // valkey-go may retry it after a network error
	cmdBlocking        // on a connection of its own; unblocked when the call ends
)

// build makes the command of tokens. The first key in the request goes
// through Keys, which gives the command its hash slot in a cluster; the
// others, of the same slot (Do checked), are plain arguments.
func build(c *client, tokens []string, keyAt []int, kind int) valkey.Completed {
	first := len(tokens)
	for _, at := range keyAt {
		first = min(first, at)
	}
	a := c.B().Arbitrary(tokens[:first]...)
	if first < len(tokens) {
		a = a.Keys(tokens[first]).Args(tokens[first+1:]...)
	}
	switch kind {
	case cmdRead:
		return a.ReadOnly()
	case cmdBlocking:
		return a.Blocking().UnblockOnCancel()
	}
	return a.Build()
}

// sameSlot reports whether keys hash to one cluster slot.
func sameSlot(keys []string) bool {
	for _, k := range keys[min(1, len(keys)):] {
		if slot(k) != slot(keys[0]) {
			return false
		}
	}
	return true
}

// blockingContext bounds a blocking command's wait: by the caller's
// context, and by the command's own timeout plus command_timeout when it
// has one (the server answers at its timeout; a server that does not is
// as dead as one that leaves any command unanswered).
func (s *Store) blockingContext(ctx context.Context, op backends.Op) (context.Context, context.CancelFunc) {
	if b, ok := op.(coll.Blocker); ok && b.Timeout() > 0 {
		return context.WithTimeout(ctx, b.Timeout()+s.d.timeout)
	}
	return ctx, noCancel
}
