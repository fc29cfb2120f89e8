package valkey

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

var (
	// errRefetch answers a cached read that must not use the client cache
	// this time: the fill it would wait for may predate a write of this
	// process, or was abandoned. The read goes to the server uncached.
	errRefetch = errors.New("client cache fill overtaken by a write")
	// errNotConnected: no connection has succeeded yet.
	errNotConnected = errors.New("not connected")
	// errClosed: the driver has been closed.
	errClosed = errors.New("backend closed")
)

// Server error codes that say the server cannot serve now rather than that
// the request was wrong: loading, failing over, out of memory, or refusing
// our credentials. The fronts answer them as unavailability (HTTP 503).
var unavailableCodes = map[string]bool{
	"LOADING": true, "BUSY": true, "MASTERDOWN": true, "CLUSTERDOWN": true,
	"TRYAGAIN": true, "READONLY": true, "NOREPLICAS": true, "OOM": true,
	"NOAUTH": true, "WRONGPASS": true, "NOPERM": true,
}

// wrongType reports the server's refusal of a command on a key that holds
// another type than the command's.
func wrongType(err error) bool {
	verr, ok := valkey.IsValkeyErr(err)
	return ok && strings.HasPrefix(verr.Error(), "WRONGTYPE")
}

// fail turns what valkey-go returned for op into the error a Backend
// returns, naming the operation (the caller names the backend). When the caller's own
// context ended, that is the error: the store did nothing wrong.
func (d *Driver) fail(parent context.Context, op string, err error) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("%s: %w", op, perr)
	}
	d.stats.errors.Add(1)
	if verr, ok := valkey.IsValkeyErr(err); ok {
		msg := verr.Error()
		switch {
		case strings.HasPrefix(msg, "WRONGTYPE"):
			return fmt.Errorf("%s: %w", op, backends.ErrWrongType)
		// INCRBY's refusals: valkey-go strips the "ERR " before the texts
		// the backends' errors have.
		case strings.Contains(msg, backends.ErrNotInteger.Error()):
			return fmt.Errorf("%s: %w", op, backends.ErrNotInteger)
		case strings.Contains(msg, backends.ErrOverflow.Error()):
			return fmt.Errorf("%s: %w", op, backends.ErrOverflow)
		}
		code, _, _ := strings.Cut(msg, " ")
		if !unavailableCodes[code] {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	// Anything the server did not say (a refused or broken connection, the
	// command timeout, a closed client) is unavailability too.
	return fmt.Errorf("%s: %w: %w", op, backends.ErrUnavailable, err)
}
