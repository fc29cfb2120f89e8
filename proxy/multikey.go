package proxy

import (
	"context"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Multi-key commands (MGET, MSET, DEL, UNLINK, EXISTS) may name keys of
// several routes. They resolve every key first (a key with no route fails
// the whole command before anything runs), then make one backend call per
// route with that route's keys, and put the answers back in the client's
// order. The common case, every key on one route, is one call and no
// reshuffling.
//
// Writes across routes are not atomic: when one route fails after another
// succeeded the client gets the error, and the first route's keys stay
// written. A failed write is never answered OK.

// scratch is per-connection memory the multi-key commands reuse, so they
// allocate nothing once warm.
type scratch struct {
	routes []*route.Route // per key
	keys   []string       // per key, as its route stores it
	sub    []string       // one route's keys
	where  []int          // their positions in keys
	vals   [][]byte       // per key, the reply
	got    [][]byte       // one route's answer
	pairs  []backends.KV  // MSET
	seen   []*route.Route // the routes done
	one    [1]string      // a one-key call
}

// oneKey lends k as a one-element key list.
func (c *conn) oneKey(k string) []string {
	c.one[0] = k
	return c.one[:]
}

// resolve routes every step-th argument of keys. It returns the route all
// keys share (nil when they span several) and false, having answered, when
// a key has no route.
func (c *conn) resolve(keys [][]byte, step int) (single *route.Route, ok bool) {
	c.routes, c.keys, c.seen = c.routes[:0], c.keys[:0], c.seen[:0]
	for i := 0; i < len(keys); i += step {
		r, k := c.key(keys[i])
		if r == nil {
			return nil, false
		}
		if i == 0 {
			single = r
		} else if r != single {
			single = nil
		}
		c.routes = append(c.routes, r)
		c.keys = append(c.keys, k)
	}
	return single, true
}

// nextRoute returns a route resolve found that has not been done yet, with
// its keys in c.sub and their positions in c.where; nil when all are done.
func (c *conn) nextRoute() *route.Route {
	for i, r := range c.routes {
		if r == nil || contains(c.seen, r) {
			continue
		}
		c.seen = append(c.seen, r)
		c.sub, c.where = c.sub[:0], c.where[:0]
		for j := i; j < len(c.routes); j++ {
			if c.routes[j] == r {
				c.sub = append(c.sub, c.keys[j])
				c.where = append(c.where, j)
			}
		}
		return r
	}
	return nil
}

func contains(rs []*route.Route, r *route.Route) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// clearScratch drops the references a command left in scratch (keys point
// into the read buffer, values are the backend's), and the slices
// themselves after a command with very many keys.
func (c *conn) clearScratch() {
	if cap(c.keys) > maxIdleArgs || cap(c.pairs) > maxIdleArgs {
		c.scratch = scratch{}
		return
	}
	clear(c.routes)
	clear(c.keys)
	clear(c.sub)
	clear(c.vals)
	clear(c.got)
	clear(c.pairs)
	clear(c.seen)
	c.seen = c.seen[:0]
	c.one[0] = ""
}

// mget reads the values of keys, nil for absent ones, or answers an error
// and returns false. The values stay valid until clearScratch.
func (c *conn) mget(keys [][]byte) ([][]byte, bool) {
	single, ok := c.resolve(keys, 1)
	if !ok {
		return nil, false
	}
	if single != nil {
		if !c.mgetFrom(single, c.keys, &c.vals) {
			return nil, false
		}
		return c.vals, true
	}
	c.vals = append(c.vals[:0], make([][]byte, len(c.keys))...)
	for r := c.nextRoute(); r != nil; r = c.nextRoute() {
		if !c.mgetFrom(r, c.sub, &c.got) {
			return nil, false
		}
		for n, j := range c.where {
			c.vals[j] = c.got[n]
		}
	}
	return c.vals, true
}

// mgetFrom reads keys from r's store into *buf (a scratch slice, reused),
// or answers the error, clears the scratch and returns false.
func (c *conn) mgetFrom(r *route.Route, keys []string, buf *[][]byte) bool {
	vals, err := r.Backend.MGet(c.ctx, keys, (*buf)[:0])
	*buf = vals
	if err != nil {
		c.backendErr(r, err)
		c.clearScratch()
		return false
	}
	return true
}

// mset stores key value pairs, or answers an error and returns false.
// With made (one entry per pair), it asks the stores which pairs made
// their key (backends.KV.AskCreated) and says so there.
func (c *conn) mset(kv [][]byte, made []bool) bool {
	defer c.clearScratch()
	single, ok := c.resolve(kv, 2)
	if !ok {
		return false
	}
	ask := made != nil
	if single != nil {
		c.pairs = c.pairs[:0]
		for i, k := range c.keys {
			c.pairs = append(c.pairs, backends.KV{Key: k, Val: kv[2*i+1], AskCreated: ask})
		}
		if err := single.Backend.MSet(c.ctx, c.pairs); err != nil {
			c.backendErr(single, err)
			return false
		}
		if ask {
			for i, p := range c.pairs {
				made[i] = p.Created
			}
		}
		return true
	}
	for r := c.nextRoute(); r != nil; r = c.nextRoute() {
		c.pairs = c.pairs[:0]
		for n, j := range c.where {
			c.pairs = append(c.pairs, backends.KV{Key: c.sub[n], Val: kv[2*j+1], AskCreated: ask})
		}
		if err := r.Backend.MSet(c.ctx, c.pairs); err != nil {
			c.backendErr(r, err)
			return false
		}
		if ask {
			for n, j := range c.where {
				made[j] = c.pairs[n].Created
			}
		}
	}
	return true
}

// countFn is a backend's Del or Exists.
type countFn func(b backends.Backend, ctx context.Context, keys []string) (int64, error)

// count sums what fn returns over the routes of keys, or answers an error
// and returns false.
func (c *conn) count(keys [][]byte, fn countFn) (int64, bool) {
	defer c.clearScratch()
	single, ok := c.resolve(keys, 1)
	if !ok {
		return 0, false
	}
	if single != nil {
		n, err := fn(single.Backend, c.ctx, c.keys)
		if err != nil {
			c.backendErr(single, err)
			return 0, false
		}
		return n, true
	}
	var total int64
	for r := c.nextRoute(); r != nil; r = c.nextRoute() {
		n, err := fn(r.Backend, c.ctx, c.sub)
		if err != nil {
			c.backendErr(r, err)
			return 0, false
		}
		total += n
	}
	return total, true
}
