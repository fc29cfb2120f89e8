// Package valkey is the backend that stores routes' keys in Valkey or Redis 7,
// standalone or cluster, through valkey-go. Every Backend call is one of the
// server's own commands (GET, SET with its options, MGET, INCRBY, PEXPIRE
// with NX/XX/GT/LT, …) in one round trip, bounded by command_timeout.
//
// Optionally, reads are served from a client-side cache kept coherent by the
// server (client_cache; see clientcache.go): this backend's L1.
//
// The driver never blocks pgcache's start on the network: it connects in the
// background, and until it has, and whenever the server is down later,
// calls fail fast with backends.ErrUnavailable. valkey-go reconnects by
// itself once connected.
package valkey

import "github.com/pgcache/pgcache/backends"

// TypeName is the `type:` of this backend in the config.
const TypeName = "valkey"

func init() {
	backends.Register(TypeName, New)
	backends.RegisterRouteCheck(TypeName, checkRoutes)
}

// New builds a valkey driver from its config options, decoded strictly (an
// unknown option is an error). It starts connecting and returns at once.
var New = backends.Decoded(NewDriver)
