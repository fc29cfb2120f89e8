package httpapi

import (
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Content types of the data API's answers.
const (
	contentTypeValue = "application/octet-stream"
	contentTypeText  = "text/plain; charset=utf-8"
	contentTypeJSON  = "application/json"
)

// replyError answers status with a one-line reason. Error bodies end in a
// newline, as net/http's http.Error does, so they read well in a terminal;
// data bodies (values, counts, JSON) do not.
func replyError(ctx *fasthttp.RequestCtx, status int, reason string) {
	ctx.Response.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType(contentTypeText)
	ctx.Response.AppendBodyString(oneLine(reason))
	ctx.Response.AppendBodyString("\n")
}

// replyBackendError answers a failed backend call on r. A failure never
// answers 2xx, so a client never takes a failed write for a stored one.
func replyBackendError(ctx *fasthttp.RequestCtx, r *route.Route, err error) {
	switch {
	case errors.Is(err, backends.ErrUnavailable):
		replyError(ctx, fasthttp.StatusServiceUnavailable, "backend "+r.BackendName+" unavailable")
	case errors.Is(err, backends.ErrBadKey), errors.Is(err, backends.ErrBadValue):
		replyError(ctx, fasthttp.StatusBadRequest, err.Error())
	case errors.Is(err, backends.ErrValueTooLarge):
		reason := err.Error()
		if r.MaxValueBytes > 0 {
			reason += ": route " + r.Name + " allows " + strconv.FormatInt(r.MaxValueBytes, 10) + " bytes"
		}
		replyError(ctx, fasthttp.StatusRequestEntityTooLarge, reason)
	case errors.Is(err, backends.ErrUnsupported):
		// Not transient, unlike the 503 below: retrying will not help.
		replyError(ctx, fasthttp.StatusNotImplemented, "backend "+r.BackendName+": "+err.Error())
	default:
		replyError(ctx, fasthttp.StatusServiceUnavailable, "backend "+r.BackendName+": "+err.Error())
	}
}

// oneLine keeps a reason on one line: an error from a driver may carry a
// newline (a PostgreSQL DETAIL, say), and a client reads one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return lineBreaks.Replace(s)
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
