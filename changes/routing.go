package changes

import (
	"slices"
	"strings"

	"github.com/pgcache/pgcache/route"
)

// routing is a table's RESP prefixes, longest first, to find the route a
// client's key belongs to without the routes' Canon (which may allocate): a
// key of a table route spelled otherwise still matches its prefix, so an
// All or a Lost report may cover more keys, never fewer.
type routing []routePrefix

type routePrefix struct {
	prefix string
	route  *route.Route
}

func routingOf(tbl *route.Table) routing {
	var rs routing
	for _, r := range tbl.Routes() {
		for _, p := range r.Prefixes {
			rs = append(rs, routePrefix{p, r})
		}
	}
	// Longest first, as Table.ForKey.
	slices.SortStableFunc(rs, func(a, b routePrefix) int { return len(b.prefix) - len(a.prefix) })
	return rs
}

// of returns the route serving key, or nil.
func (rs routing) of(key string) *route.Route {
	for _, p := range rs {
		if strings.HasPrefix(key, p.prefix) {
			return p.route
		}
	}
	return nil
}

// reaches reports whether keys under prefix p may be route r's.
func reaches(p string, r *route.Route) bool {
	for _, q := range r.Prefixes {
		if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}
