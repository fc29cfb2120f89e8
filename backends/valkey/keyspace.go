package valkey

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
	"github.com/pgcache/pgcache/internal/glob"
)

// The keyspace capabilities of a route on Valkey (backends/keyspace.go).
// Every one stays inside the route's namespace ("<route>:"): a scan asks
// for MATCH "<route>:…", a flush deletes what such a scan finds, so on a
// Valkey shared with other applications (or other routes) nothing else is
// listed or removed. With raw_keys the route's namespace is the whole
// database (its keys are what plain clients see), and a flush empties it.

// nativeCursors: a standalone server's own SCAN cursor is handed to the
// client as it is when it is below this (a server's cursor counts buckets
// of its table, far below it); cursors kept in the route's cursor.Table
// (a cluster's, whose position also names the node) are numbered above.
const nativeCursors = 1 << 52

// scanPos is a scan's position: which node (an index into the sorted
// node addresses; 0 standalone) and that node's cursor.
type scanPos struct {
	node int
	cur  uint64
}

// keyspaceState is a Store's scan cursors, made on first use.
type keyspaceState struct {
	once    sync.Once
	cursors *cursor.Table[scanPos]
}

func (s *Store) cursorTable() *cursor.Table[scanPos] {
	s.ks.once.Do(func() {
		s.ks.cursors = cursor.New[scanPos](nativeCursors, backends.MaxCursor+1, 0, 0, nil)
	})
	return s.ks.cursors
}

// scanPageMax bounds the COUNT passed to the server.
const scanPageMax = 10_000

// Scan runs SCAN with MATCH "<route>:<match>" on the server (each node of a
// cluster in turn) and returns the keys without the route's namespace.
func (s *Store) Scan(ctx context.Context, cur uint64, match string, count int) (uint64, []string, error) {
	cctx, done, c, err := s.d.begin(ctx, "scan")
	if err != nil {
		return 0, nil, err
	}
	defer done()
	pos := scanPos{}
	switch {
	case cur == 0:
	case cur < nativeCursors && !c.cluster:
		pos.cur = cur
	default:
		pos, _ = s.cursorTable().Take(cur) // unknown: from the start
	}
	nodes := []valkey.Client{c.Client}
	if c.cluster {
		nodes = sortedNodes(c.Client)
		if pos.node >= len(nodes) {
			pos = scanPos{} // the cluster changed: start over
		}
	}
	pattern := glob.Escape(s.prefix) + "*"
	if match != "" {
		pattern = glob.Escape(s.prefix) + match
	}
	node := nodes[pos.node]
	e, err := node.Do(cctx, node.B().Scan().Cursor(pos.cur).Match(pattern).
		Count(int64(min(max(count, 1), scanPageMax))).Build()).AsScanEntry()
	if err != nil {
		return 0, nil, s.d.fail(ctx, "scan", err)
	}
	keys := make([]string, 0, len(e.Elements))
	for _, k := range e.Elements {
		if strings.HasPrefix(k, s.prefix) {
			keys = append(keys, k[len(s.prefix):])
		}
	}
	pos.cur = e.Cursor
	if pos.cur == 0 {
		if pos.node+1 >= len(nodes) {
			return 0, keys, nil
		}
		pos.node++
	}
	if !c.cluster && pos.cur < nativeCursors {
		return pos.cur, keys, nil
	}
	return s.cursorTable().Put(pos), keys, nil
}

// sortedNodes lists a cluster's nodes in address order, so a scan's node
// index names the same node from one page to the next.
func sortedNodes(c valkey.Client) []valkey.Client {
	m := c.Nodes()
	addrs := make([]string, 0, len(m))
	for a := range m {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	out := make([]valkey.Client, len(addrs))
	for i, a := range addrs {
		out[i] = m[a]
	}
	return out
}

// flushPage is how many keys a flush lists and deletes at a time.
const flushPage = 1000

// Flush deletes the route's keys: a scan of its namespace and a DEL of
// each page. It is not one atomic step, as FLUSHDB is on the server: a key
// written while the flush runs may be left.
func (s *Store) Flush(ctx context.Context) error {
	var cur uint64
	for {
		next, keys, err := s.Scan(ctx, cur, "", flushPage)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if _, err := s.Del(ctx, keys); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cur = next
	}
}

// Copy is RENAME, RENAMENX or COPY on the server: atomic there. In a
// cluster two keys of different hash slots cannot be renamed (the server
// answers CROSSSLOT); they are copied as a read and a write (copyAcross),
// which is not atomic.
func (s *Store) Copy(ctx context.Context, src, dst string, o backends.CopyOptions) (backends.CopyResult, error) {
	cctx, done, c, err := s.d.begin(ctx, "copy")
	if err != nil {
		return 0, err
	}
	defer done()
	ks, kd := s.key(src), s.key(dst)
	defer s.written(ks, kd)
	if c.cluster && slot(ks) != slot(kd) {
		return s.copyAcross(ctx, cctx, c, ks, kd, o)
	}
	var cmd valkey.Completed
	switch {
	case o.Move && o.Replace:
		cmd = c.B().Rename().Key(ks).Newkey(kd).Build()
	case o.Move:
		cmd = c.B().Renamenx().Key(ks).Newkey(kd).Build()
	case o.Replace:
		cmd = c.B().Copy().Source(ks).Destination(kd).Replace().Build()
	default:
		cmd = c.B().Copy().Source(ks).Destination(kd).Build()
	}
	res := c.Do(cctx, cmd)
	if err := res.Error(); err != nil {
		verr, ok := valkey.IsValkeyErr(err)
		switch {
		case ok && strings.Contains(verr.Error(), "no such key"):
			return backends.CopyNoSource, nil
		}
		return 0, s.d.fail(ctx, "copy", err)
	}
	if o.Move && o.Replace {
		return backends.Copied, nil // RENAME's OK
	}
	n, err := res.AsInt64()
	switch {
	case err != nil:
		return 0, s.d.fail(ctx, "copy", err)
	case n == 1:
		return backends.Copied, nil
	case o.Move:
		return backends.CopyDstExists, nil // RENAMENX: src exists, or it would have failed
	}
	// COPY answers 0 both when src is missing and when dst exists.
	return s.missingOr(ctx, cctx, c, ks, backends.CopyDstExists)
}

// missingOr is CopyNoSource when ks does not exist, else r.
func (s *Store) missingOr(ctx, cctx context.Context, c *client, ks string, r backends.CopyResult) (backends.CopyResult, error) {
	n, err := c.Do(cctx, c.B().Exists().Key(ks).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, s.d.fail(ctx, "copy", err)
	case n == 0:
		return backends.CopyNoSource, nil
	}
	return r, nil
}

// copyAcross copies between hash slots of a cluster: GET and PEXPIRETIME
// of src, a SET of dst (NX without Replace) with that deadline, then for a
// move a DEL of src. Three steps, not atomic: a write of src between them
// is lost to a move.
func (s *Store) copyAcross(ctx, cctx context.Context, c *client, ks, kd string, o backends.CopyOptions) (backends.CopyResult, error) {
	reads := c.DoMulti(cctx, c.B().Get().Key(ks).Build(), c.B().Pexpiretime().Key(ks).Build())
	v, err := reads[0].ToString()
	if valkey.IsValkeyNil(err) {
		return backends.CopyNoSource, nil
	}
	if err != nil {
		return 0, s.d.fail(ctx, "copy", err)
	}
	at, err := reads[1].AsInt64()
	if err != nil {
		return 0, s.d.fail(ctx, "copy", err)
	}
	cmd := c.B().Arbitrary("SET").Keys(kd).Args(v)
	if !o.Replace {
		cmd = cmd.Args("NX")
	}
	if at > 0 {
		cmd = cmd.Args("PXAT", strconv.FormatInt(at, 10))
	}
	if err := c.Do(cctx, cmd.Build()).Error(); err != nil {
		if valkey.IsValkeyNil(err) {
			return backends.CopyDstExists, nil
		}
		return 0, s.d.fail(ctx, "copy", err)
	}
	if o.Move {
		if err := c.Do(cctx, c.B().Del().Key(ks).Build()).Error(); err != nil {
			return 0, s.d.fail(ctx, "copy", err)
		}
	}
	return backends.Copied, nil
}

// ExpireTime is PEXPIRETIME (Redis 7, Valkey).
func (s *Store) ExpireTime(ctx context.Context, key string) (int64, error) {
	s.d.cache.unwatched(s.prefix, key) // uncached: see notify.go
	return one(ctx, s, "expiretime", key, false, func(c *client, k string) valkey.Completed {
		return c.B().Pexpiretime().Key(k).Build()
	}, valkey.ValkeyResult.AsInt64)
}

// randomTries is how many of the server's RANDOMKEYs a prefixed route
// tries for one of its own before it scans for one.
const randomTries = 8

// RandomKey is the server's RANDOMKEY when the route owns the keyspace
// (raw_keys); a prefixed route keeps the first of a few RANDOMKEYs that is
// its own, or else the first key a scan of its namespace finds.
func (s *Store) RandomKey(ctx context.Context) (string, bool, error) {
	cctx, done, c, err := s.d.begin(ctx, "randomkey")
	if err != nil {
		return "", false, err
	}
	defer done()
	for range randomTries {
		k, err := c.Do(cctx, c.B().Randomkey().Build()).ToString()
		if valkey.IsValkeyNil(err) {
			return "", false, nil // the server is empty
		}
		if err != nil {
			return "", false, s.d.fail(ctx, "randomkey", err)
		}
		if strings.HasPrefix(k, s.prefix) {
			return k[len(s.prefix):], true, nil
		}
	}
	var cur uint64
	for {
		next, keys, err := s.Scan(ctx, cur, "", flushPage)
		if err != nil || len(keys) > 0 {
			return first(keys), len(keys) > 0, err
		}
		if next == 0 {
			return "", false, nil
		}
		cur = next
	}
}

func first(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

var (
	_ backends.Scanner     = (*Store)(nil)
	_ backends.Flusher     = (*Store)(nil)
	_ backends.Copier      = (*Store)(nil)
	_ backends.ExpireTimer = (*Store)(nil)
	_ backends.RandomKeyer = (*Store)(nil)
)
