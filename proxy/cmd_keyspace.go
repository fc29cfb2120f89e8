package proxy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/internal/glob"
	"github.com/pgcache/pgcache/route"
)

// Keyspace commands: the ones that look at a key's deadline or type, copy
// a key to another, or go over every key.
//
// What SCAN, KEYS, RANDOMKEY and FLUSHDB see is the keyspace RESP reaches
// and pgcache owns: the routes with a prefix whose store is a
// backends.Scanner (memory routes, kv tables, Valkey routes). A table route
// (the rows of a source_table) is not one: it is never listed, and never
// flushed. A route's keys are listed under its first prefix; a key that
// name would send to another route (one with a longer prefix) is left out,
// since a client could not reach it under that name. FLUSHALL flushes the
// routes RESP does not reach too (HTTP-only ones), tables still excepted.

// EXPIRETIME key
func cmdExpireTime(c *conn, args [][]byte) { ttl(c, args[1], false, true) }

// PEXPIRETIME key
func cmdPExpireTime(c *conn, args [][]byte) { ttl(c, args[1], true, true) }

// TOUCH key [key ...]: the keys that exist (there is no access time to set
// beyond what a read tells the store's eviction).
func cmdTouch(c *conn, args [][]byte) {
	if n, ok := c.count(args[1:], backends.Backend.Exists); ok {
		c.writeInt(n)
	}
}

// RENAME key newkey
func cmdRename(c *conn, args [][]byte) { rename(c, args, false) }

// RENAMENX key newkey
func cmdRenameNX(c *conn, args [][]byte) { rename(c, args, true) }

// rename is RENAME and RENAMENX as Redis 7's renameGenericCommand answers
// them: a missing source is an error, a key renamed to itself is left as
// it is (RENAMENX answers 0), and the key keeps its deadline. The new name
// is a key made, as Redis adds it (dbAdd, after deleting what it replaced):
// it gets "new" whether or not it existed.
func rename(c *conn, args [][]byte, nx bool) {
	r, src, dst, cp := c.keyPair(args)
	if r == nil {
		return
	}
	if src == dst {
		n, err := r.Backend.Exists(c.ctx, c.oneKey(src))
		c.clearScratch()
		switch {
		case err != nil:
			c.backendErr(r, err)
		case n == 0:
			c.writeError(errNoSuchKey)
		case nx:
			c.writeInt(0)
		default:
			c.writeOK()
		}
		return
	}
	res, err := cp.Copy(c.ctx, src, dst, backends.CopyOptions{Replace: !nx, Move: true})
	c.newKey(err == nil && res == backends.Copied, args[2])
	switch {
	case err != nil:
		c.copyErr(r, args, err)
	case res == backends.CopyNoSource:
		c.writeError(errNoSuchKey)
	case res == backends.CopyDstExists:
		c.writeInt(0)
	case nx:
		c.writeInt(1)
	default:
		c.writeOK()
	}
}

// COPY source destination [DB destination-db] [REPLACE]
//
// There is one database: DB 0 is the only one there is (as on a Redis
// with `databases 1`). The copy is a key made, as RENAME's new name is.
func cmdCopy(c *conn, args [][]byte) {
	r, src, dst, cp := c.keyPair(args)
	if r == nil {
		return
	}
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case is(args[j], "replace"):
			replace = true
		case is(args[j], "db") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			switch {
			case !ok:
				c.writeError(errNotInteger)
				return
			case n < math.MinInt32 || n > math.MaxInt32:
				c.writeError(errNotInt32)
				return
			case n != 0:
				c.writeError(errDBIndex)
				return
			}
			j++
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if src == dst {
		c.writeError(errSameObject)
		return
	}
	res, err := cp.Copy(c.ctx, src, dst, backends.CopyOptions{Replace: replace})
	c.newKey(err == nil && res == backends.Copied, args[2])
	switch {
	case err != nil:
		c.copyErr(r, args, err)
	case res == backends.Copied:
		c.writeInt(1)
	default:
		c.writeInt(0)
	}
}

// copyErr answers a failed RENAME or COPY; a route whose store cannot
// copy (the wrapper's Copy says so) is named with the command.
func (c *conn) copyErr(r *route.Route, args [][]byte, err error) {
	if errors.Is(err, backends.ErrUnsupported) {
		err = fmt.Errorf("%s: %w", strings.ToLower(string(args[0])), err)
	}
	c.backendErr(r, err)
}

// keyPair resolves the two keys of RENAME or COPY, which must be on one
// route whose store can copy (Redis Cluster likewise refuses keys of two
// slots, before anything else), or answers and returns a nil route. The
// route's wrapper is the Copier, which reports the copy as a write.
func (c *conn) keyPair(args [][]byte) (r *route.Route, src, dst string, cp backends.Copier) {
	r, src = c.key(args[1])
	if r == nil {
		return nil, "", "", nil
	}
	r2, dst := c.key(args[2])
	switch {
	case r2 == nil:
		return nil, "", "", nil
	case r2 != r:
		c.writeError(errCrossRoute)
		return nil, "", "", nil
	}
	cp, ok := backends.As[backends.Copier](r.Backend)
	if !ok {
		c.writeError(backendError(r, fmt.Errorf("%s: %w", strings.ToLower(string(args[0])), backends.ErrUnsupported)))
		return nil, "", "", nil
	}
	return r, src, dst, cp
}

// A SCAN cursor is a route's own cursor (at most backends.MaxCursor) and
// the route's index in the table, in its low scanRouteBits bits: at most
// 2^63-1, a number every client parses. A scan goes through the routes in
// table order. A reload that reorders routes during a scan may make it skip
// or repeat a route's keys.
const (
	scanRouteBits = 10
	scanRoutes    = 1 << scanRouteBits // routes past this many are not scanned
	scanCount     = 10                 // SCAN's default COUNT
	keysPage      = 1000               // the COUNT of the pages KEYS reads
)

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *conn, args [][]byte) {
	cur, ok := parseCursor(args[1])
	if !ok {
		c.writeError(errInvalidCursor)
		return
	}
	count := int64(scanCount)
	match := ""
	var typ []byte
	for j := 2; j < len(args); j += 2 {
		more := j+1 < len(args)
		switch {
		case is(args[j], "count") && more:
			n, ok := parseInt(args[j+1])
			if !ok {
				c.writeError(errNotInteger)
				return
			}
			if n < 1 {
				c.writeError(errSyntax)
				return
			}
			count = n
		case is(args[j], "match") && more:
			match = string(args[j+1])
		case is(args[j], "type") && more:
			typ = args[j+1]
		default:
			c.writeError(errSyntax)
			return
		}
	}
	want := backends.TypeNone
	if typ != nil {
		var ok bool
		if want, ok = backends.ParseType(string(typ)); !ok {
			// An unknown type, which Redis 7.0 answers as one no key has.
			c.writeScan(0, nil)
			return
		}
	}
	next, keys, r, err := c.scan(cur, match, int(min(count, math.MaxInt32)), want)
	if err != nil {
		c.backendErr(r, err)
		return
	}
	c.writeScan(next, keys)
}

// ofType keeps the keys (RESP names) of a route's page that hold a value
// of type want: SCAN … TYPE, which Redis too filters after the scan.
func (c *conn) ofType(r *route.Route, names []string, want backends.Type) ([]string, error) {
	kept := names[:0]
	for _, name := range names {
		args := [][]byte{[]byte("type"), []byte(name)}
		op, _ := coll.ParseType(args)
		if err := r.Backend.Do(c.ctx, []string{name[len(r.Prefixes[0]):]}, op); err != nil {
			return nil, err
		}
		if op.(*coll.TypeOf).Of() == want {
			kept = append(kept, name)
		}
	}
	return kept, nil
}

func (c *conn) writeScan(next uint64, keys []string) {
	c.writeArray(2)
	c.writeBulkString(strconv.FormatUint(next, 10))
	c.writeArray(len(keys))
	for _, k := range keys {
		c.writeBulkString(k)
	}
}

// scan runs one step of a scan over the routes: the route the cursor names
// is asked for a page, of keys that hold a value of type want unless that
// is TypeNone; when it is done the next route is started (in the same call
// while pages come back empty). On error r is the route.
func (c *conn) scan(cur uint64, match string, count int, want backends.Type) (next uint64, keys []string, r *route.Route, err error) {
	routes := c.t.Routes()
	idx, rc := int(cur%scanRoutes), cur>>scanRouteBits
	for ; idx < min(len(routes), scanRoutes); idx, rc = idx+1, 0 {
		r = routes[idx]
		sc, ok := scannable(r)
		if !ok {
			continue
		}
		prefix := r.Prefixes[0]
		sub, exact, none := pushdown(match, prefix)
		if none {
			continue
		}
		n, page, err := sc.Scan(c.ctx, rc, sub, count)
		if err != nil {
			return 0, nil, r, err
		}
		mark := len(keys)
		keys = c.ownKeys(keys, r, prefix, page, match, exact)
		if want != backends.TypeNone {
			kept, err := c.ofType(r, keys[mark:], want)
			if err != nil {
				return 0, nil, r, err
			}
			keys = keys[:mark+len(kept)]
		}
		if n != 0 {
			return n<<scanRouteBits | uint64(idx), keys, nil, nil
		}
		if len(keys) > 0 {
			if later := c.nextScannable(idx + 1); later > 0 {
				return uint64(later), keys, nil, nil
			}
			return 0, keys, nil, nil
		}
	}
	return 0, keys, nil, nil
}

// nextScannable is the index of the first route from i on that a scan
// visits, or 0 when there is none (no scan starts past route 0 with
// cursor 0: that is the start).
func (c *conn) nextScannable(i int) int {
	routes := c.t.Routes()
	for ; i < min(len(routes), scanRoutes); i++ {
		if _, ok := scannable(routes[i]); ok {
			return i
		}
	}
	return 0
}

// scannable is a route's Scanner when SCAN visits the route: RESP reaches
// it, and its store can list its keys.
func scannable(r *route.Route) (backends.Scanner, bool) {
	if len(r.Prefixes) == 0 {
		return nil, false
	}
	return backends.As[backends.Scanner](r.Backend)
}

// ownKeys appends to keys the RESP names of a route's page that match
// (when the store could not be given the pattern exactly) and that name
// the route's key.
func (c *conn) ownKeys(keys []string, r *route.Route, prefix string, page []string, match string, exact bool) []string {
	for _, k := range page {
		name := prefix + k
		if !exact && !backends.Match(match, name) {
			continue
		}
		if owner, _ := c.t.ForKey(name); owner != r {
			continue
		}
		keys = append(keys, name)
	}
	return keys
}

// pushdown turns a pattern over RESP names into one over the keys of a
// route with the given prefix. exact: the store's matches are exactly the
// names that match (else the caller matches each name again); none: no
// key of the route can match.
func pushdown(match, prefix string) (sub string, exact, none bool) {
	if match == "" || match == "*" {
		return "", true, false
	}
	lit, rest := glob.LiteralPrefix(match)
	if len(lit) < len(prefix) {
		if !strings.HasPrefix(prefix, lit) {
			return "", false, true
		}
		return "", false, false // e.g. "u*" over "user:": every key, matched here
	}
	if !strings.HasPrefix(lit, prefix) {
		return "", false, true
	}
	sub = glob.Escape(lit[len(prefix):]) + rest
	if sub == "" {
		return "", false, false // only the key named by the prefix: "" is every key
	}
	return sub, true, false
}

// parseCursor reads a cursor as Redis's strtoul does: decimal, an optional
// sign (a negative one wraps around), nothing after; the empty string is 0,
// and the argument ends at a NUL as a C string does.
func parseCursor(b []byte) (uint64, bool) {
	b = clip(b, len(b))
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	digits := b
	if digits[0] == '+' || digits[0] == '-' {
		neg, digits = digits[0] == '-', digits[1:]
	}
	if len(digits) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// KEYS pattern
func cmdKeys(c *conn, args [][]byte) {
	match := string(args[1])
	var keys []string
	var cur uint64
	for {
		next, page, r, err := c.scan(cur, match, keysPage, backends.TypeNone)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		keys = append(keys, page...)
		if next == 0 {
			break
		}
		cur = next
	}
	c.writeArray(len(keys))
	for _, k := range keys {
		c.writeBulkString(k)
	}
}

// FLUSHDB [ASYNC|SYNC]
func cmdFlushDB(c *conn, args [][]byte) { flush(c, args, false) }

// FLUSHALL [ASYNC|SYNC]
func cmdFlushAll(c *conn, args [][]byte) { flush(c, args, true) }

// flush empties every route a scan visits (all: every route, HTTP-only
// ones too) whose store can flush, route after route: ASYNC and SYNC both
// answer once every route is empty. A table route is never flushed.
func flush(c *conn, args [][]byte, all bool) {
	if len(args) > 2 || len(args) == 2 && !is(args[1], "sync") && !is(args[1], "async") {
		c.writeError(errSyntax)
		return
	}
	// Every tracking client drops everything, as Redis tells them on a
	// flush, even when a route failed: some may have been emptied.
	defer c.s.tracking.Flushed()
	for _, r := range c.t.Routes() {
		if !all && len(r.Prefixes) == 0 {
			continue
		}
		f, ok := backends.As[backends.Flusher](r.Backend)
		if !ok {
			continue
		}
		err := f.Flush(c.ctx)
		if errors.Is(err, backends.ErrUnsupported) {
			continue // an L1 over a table route
		}
		if err != nil {
			c.backendErr(r, err)
			return
		}
	}
	c.writeOK()
}

// RANDOMKEY: a random key of a route picked at random among those a scan
// visits; nil when they are all empty.
func cmdRandomKey(c *conn, _ [][]byte) {
	routes := c.t.Routes()
	start := 0
	if len(routes) > 0 {
		start = rand.IntN(len(routes))
	}
	for i := range routes {
		r := routes[(start+i)%len(routes)]
		if _, ok := scannable(r); !ok {
			continue
		}
		rk, ok := backends.As[backends.RandomKeyer](r.Backend)
		if !ok {
			continue
		}
		k, ok, err := rk.RandomKey(c.ctx)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		if !ok {
			continue
		}
		name := r.Prefixes[0] + k
		if owner, _ := c.t.ForKey(name); owner == r {
			c.writeBulkString(name)
			return
		}
	}
	c.writeNull()
}
