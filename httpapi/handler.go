package httpapi

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// handle serves one data request: /{route}/{action}?id=…
func (d *Data) handle(ctx *fasthttp.RequestCtx) {
	a := d.serve(ctx)
	d.m.count(a, ctx.Response.StatusCode())
}

// serve answers the request and says which action it was, for metrics.
// Checks run from the outside in: the credentials, the path, the route, the
// method, the framing, then (in the action) the query and the body.
func (d *Data) serve(ctx *fasthttp.RequestCtx) action {
	if !d.checkAuth(ctx) {
		return actionOther
	}
	name, verb, ok := splitPath(ctx.Path())
	if !ok {
		replyError(ctx, fasthttp.StatusNotFound, "not found: want /{route}/get, /{route}/set, /{route}/del or /{route}/mget")
		return actionOther
	}
	a := parseAction(verb)
	if a == actionOther {
		replyError(ctx, fasthttp.StatusNotFound, "unknown action "+quoteInput(verb)+": want get, set, del or mget")
		return a
	}

	t, release := d.router.Acquire()
	defer release()
	// b2s: ByName only looks the name up in a map and keeps nothing.
	r := t.ByName(b2s(name))
	if r == nil {
		replyError(ctx, fasthttp.StatusNotFound, "unknown route "+quoteInput(name))
		return a
	}
	if !methodAllowed(a, ctx) {
		ctx.Response.Header.Set(fasthttp.HeaderAllow, allowed[a])
		replyError(ctx, fasthttp.StatusMethodNotAllowed,
			"method "+quoteInput(ctx.Method())+" not allowed for "+actionNames[a]+": use "+allowed[a])
		return a
	}
	if ambiguousFraming(&ctx.Request.Header) {
		// RFC 9112 §6.3 lets a server reject such a request, and it must
		// close the connection after it (fasthttp does). Rejecting rather
		// than trusting Transfer-Encoding means a write whose body a proxy
		// in front may have framed differently never takes effect.
		ctx.SetConnectionClose()
		replyError(ctx, fasthttp.StatusBadRequest, "request has both Content-Length and Transfer-Encoding")
		return a
	}

	switch a {
	case actionGet:
		d.get(ctx, r)
	case actionSet:
		d.set(ctx, r)
	case actionDel:
		d.del(ctx, r)
	case actionMGet:
		d.mget(ctx, r)
	}
	return a
}

// splitPath splits "/{route}/{action}". fasthttp has already decoded and
// normalised the path ("//" and ".." resolved), so a route name can hold no
// slash.
func splitPath(p []byte) (name, verb []byte, ok bool) {
	if len(p) < 2 || p[0] != '/' {
		return nil, nil, false
	}
	p = p[1:]
	i := bytes.IndexByte(p, '/')
	if i <= 0 || i == len(p)-1 {
		return nil, nil, false
	}
	return p[:i], p[i+1:], true
}

func parseAction(verb []byte) action {
	switch b2s(verb) {
	case "get":
		return actionGet
	case "set":
		return actionSet
	case "del":
		return actionDel
	case "mget":
		return actionMGet
	}
	return actionOther
}

// allowed is each action's Allow header. Reads answer HEAD too, as any GET
// resource does; del takes POST for clients that cannot send DELETE.
var allowed = [numActions]string{
	actionGet:  "GET, HEAD",
	actionSet:  "POST, PUT",
	actionDel:  "DELETE, POST",
	actionMGet: "GET, HEAD",
}

func methodAllowed(a action, ctx *fasthttp.RequestCtx) bool {
	switch a {
	case actionGet, actionMGet:
		return ctx.IsGet() || ctx.IsHead()
	case actionSet:
		return ctx.IsPost() || ctx.IsPut()
	case actionDel:
		return ctx.IsDelete() || ctx.IsPost()
	}
	return false
}

// ambiguousFraming reports a request that came with both Transfer-Encoding
// and Content-Length. fasthttp frames such a body by Transfer-Encoding and
// forgets the Content-Length, so the raw headers are the only witness. It
// also marks the request Connection: close, which few others are: only those
// are scanned.
func ambiguousFraming(h *fasthttp.RequestHeader) bool {
	if !h.ConnectionClose() {
		return false
	}
	var cl, te bool
	raw := h.RawHeaders()
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		name := bytes.TrimSpace(line[:i])
		cl = cl || bytes.EqualFold(name, headerContentLength)
		te = te || bytes.EqualFold(name, headerTransferEncoding)
	}
	return cl && te
}

var (
	headerContentLength    = []byte(fasthttp.HeaderContentLength)
	headerTransferEncoding = []byte(fasthttp.HeaderTransferEncoding)
)

// maxQuoted bounds how much of a client's input an error echoes back.
const maxQuoted = 64

// quoteInput quotes a piece of the request for an error message.
func quoteInput(b []byte) string {
	if len(b) > maxQuoted {
		return strconv.Quote(string(b[:maxQuoted])) + "…"
	}
	return strconv.Quote(string(b))
}

// b2s views b as a string without copying. The string is valid only while b
// is neither modified nor reused: every caller says why that holds for the
// call it makes, and nothing keeps the string past it.
func b2s(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
