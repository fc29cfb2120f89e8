package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgcache/pgcache/backends"
)

var (
	// ErrTableMismatch: a route's table exists but not as the route needs it
	// (another layout or persistence, no primary key, not a table). The
	// table is never altered: the message names the difference.
	ErrTableMismatch = errors.New("table does not fit the route")
	// ErrNoTable: a table route's source_table does not exist.
	ErrNoTable = errors.New("table does not exist")
)

// SQLSTATEs the backend reacts to.
const (
	sqlstateUndefinedTable = "42P01" // the table was dropped under us: set it up again
	sqlstateDeadlock       = "40P01"
	sqlstateSerialization  = "40001"
)

// unavailable reports whether err means PostgreSQL cannot be reached or is
// not serving now, as opposed to refusing this request: the request may
// succeed later, and the fronts say "backend unavailable" (RESP) or 503.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		return strings.HasPrefix(code, "08") || // connection exception
			code == "57P01" || code == "57P02" || code == "57P03" || // admin/crash shutdown, cannot connect now
			code == "53300" // too many connections
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		pgconn.Timeout(err) ||
		pgconn.SafeToRetry(err) || // nothing reached the server: the connection was already gone
		errors.Is(err, context.DeadlineExceeded) || // our command_timeout: no answer in time
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retryable reports whether running the statement again is safe and may
// succeed: nothing reached the server (a pooled connection found dead after
// a restart), or the server rolled the statement back to break a deadlock
// or a serialization conflict.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	switch sqlState(err) {
	case sqlstateDeadlock, sqlstateSerialization:
		return true
	}
	return false
}

// opError builds the error of a failed operation. parent is the caller's
// context: when it ended, its error is the cause (the caller gave up, the
// database did not fail). Connection-level failures wrap
// backends.ErrUnavailable; the rest carry the database's reason.
func opError(parent context.Context, where, op string, err error) error {
	switch {
	case errors.Is(err, backends.ErrBadKey), errors.Is(err, backends.ErrBadValue),
		errors.Is(err, backends.ErrNotInteger), errors.Is(err, backends.ErrOverflow),
		errors.Is(err, backends.ErrUnsupported), errors.Is(err, backends.ErrUnavailable):
		return fmt.Errorf("%s: %s: %w", where, op, err)
	case parent.Err() != nil:
		return fmt.Errorf("%s: %s: %w", where, op, parent.Err())
	case unavailable(err):
		return fmt.Errorf("%s: %s: %w: %w", where, op, backends.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %s: %w", where, op, err)
}
