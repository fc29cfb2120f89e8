package httpapi

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/pgcache/pgcache/internal/auth"
)

// Bearer tokens (RFC 6750). With auth configured every data request, and
// every admin request but the probes, carries `Authorization: Bearer <t>`
// where t is auth.http_token or a user's password; others are answered 401
// with a WWW-Authenticate challenge, before the path is looked at, so an
// unauthenticated client learns nothing about the routes.

// challenge is the WWW-Authenticate header of a 401.
const challenge = `Bearer realm="pgcache"`

// reasonUnauthorized is the body of a 401: it says what to send, never
// which part of what was sent was wrong.
const reasonUnauthorized = "unauthorized: send Authorization: Bearer <token>"

var bearerScheme = []byte("bearer ")

// bearerToken returns the token of an Authorization header value, nil when
// it is not a bearer credential. The scheme is case-insensitive (RFC 9110).
func bearerToken(h []byte) []byte {
	if len(h) <= len(bearerScheme) || !bytes.EqualFold(h[:len(bearerScheme)], bearerScheme) {
		return nil
	}
	return bytes.TrimSpace(h[len(bearerScheme):])
}

// authorized reports whether a request carrying header h may go on.
func authorized(users *auth.Users, h []byte) bool {
	if !users.HTTP() {
		return true
	}
	tok := bearerToken(h)
	return tok != nil && users.Bearer(tok)
}

// SetUsers replaces the credentials data requests are checked against;
// nil turns auth off. Requests after the call see them.
func (d *Data) SetUsers(users *auth.Users) { d.users.Store(users) }

// checkAuth answers 401 and returns false when the request is not
// authorized.
func (d *Data) checkAuth(ctx *fasthttp.RequestCtx) bool {
	if authorized(d.users.Load(), ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)) {
		return true
	}
	ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, challenge)
	replyError(ctx, fasthttp.StatusUnauthorized, reasonUnauthorized)
	return false
}

// SetUsers replaces the credentials admin requests are checked against;
// nil turns auth off.
func (a *Admin) SetUsers(users *auth.Users) { a.users.Store(users) }

// requireAuth guards every admin endpoint but the probes: /healthz and
// /readyz tell nothing worth a secret, and a kubelet or load balancer
// probes them without one.
func (a *Admin) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" &&
			!authorized(a.users.Load(), []byte(r.Header.Get("Authorization"))) {
			w.Header().Set("WWW-Authenticate", challenge)
			text(w, http.StatusUnauthorized, reasonUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
