package backends

// RouteCheck tells, without the network and without building anything,
// whether a backend can open the routes a config gives it: the refusals its
// Open would make before first contact. It returns one error per spec, in
// order, nil for a spec it can open. options are the backend's entry
// without `type`, and may be invalid themselves (that is the factory's to
// report): a check reads only what it needs.
//
// Every config load runs the checks before opening any route, and so does
// `pgcache validate`, so both refuse the same routes for the same reasons,
// whether or not the backend's own options are valid.
type RouteCheck func(options map[string]any, specs []RouteSpec) []error

var checks = newRegistry[RouteCheck]("RegisterRouteCheck", "check")

// RegisterRouteCheck sets the route check of a driver type, from init,
// next to Register. A type without one accepts every route until Open.
func RegisterRouteCheck(typeName string, c RouteCheck) { checks.add(typeName, c, c == nil) }

// LookupRouteCheck returns the route check of a driver type, nil if it has
// none.
func LookupRouteCheck(typeName string) RouteCheck {
	c, _ := checks.get(typeName)
	return c
}
