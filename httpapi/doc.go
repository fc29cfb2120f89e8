/*
Package httpapi serves pgcache over HTTP: the data API (Data, on fasthttp),
which reads and writes the same routes as the RESP front through one
route.Router, and the admin API (Admin, on net/http, loopback only) with
health, readiness, metrics, the running config and pprof.

# Data API

Every route of the config is reachable under its name; the key is the
route's own key, without the RESP prefix: RESP "pg:42" is /postgres/get?id=42.
Keys are query arguments, so they are percent-encoded ("+" is a space; send
"%2B" for a plus). Every request is answered one of the statuses below;
errors carry a one-line text/plain reason ending in a newline.

	GET|HEAD    /{route}/get?id=K            200 the value (application/octet-stream), 404 absent
	POST|PUT    /{route}/set?id=K[&ttl=S]    204; body = value; ttl whole seconds > 0, none = no expiry
	DELETE|POST /{route}/del?id=K[&id=K2…]   200 how many existed, as decimal text ("1")
	GET|HEAD    /{route}/mget?id=K1&id=K2…   200 JSON array in request order: base64 value or null

mget encodes values in standard base64 with padding (RFC 4648 §4, as Go's
encoding/json writes []byte), so every byte string round-trips; an empty
value is "" and an absent key null. Duplicated ids are answered once each.

	401  auth is on and the request has no valid Authorization: Bearer
	     token (auth.http_token or a user's password); answered before the
	     path is looked at, with WWW-Authenticate: Bearer realm="pgcache"
	400  missing, empty or repeated id (get, set), unknown or repeated
	     argument, bad ttl, invalid key or value (backends.ErrBadKey,
	     ErrBadValue), both Content-Length and Transfer-Encoding (then the
	     connection is closed), a request fasthttp cannot parse
	404  unknown route, unknown action, a path not /{route}/{action};
	     get: key absent ("not found")
	405  method not allowed; Allow lists the ones that are
	408  the request was not read within ReadTimeout (then closed)
	413  body over MaxBodyBytes, value over the route's max_value_bytes
	415  set with a Content-Encoding other than identity
	431  request line and headers over ReadBufferSize (then closed)
	501  the backend cannot do this operation (backends.ErrUnsupported)
	503  backend unavailable ("backend pg unavailable") or failed
	     ("backend pg: <error>"); too many connections (MaxConns)

A write that failed never answers 2xx.

# Admin API (loopback: listen.admin, conf.DefaultAdminAddr)

	GET  /healthz        200 "ok" while the process is up
	GET  /readyz         200 "ok"; 503 one line per backend that cannot serve
	GET  /metrics        Prometheus text format
	GET  /config         200 the running config as JSON, secrets redacted
	POST /load           200 "ok"; 400 every reason the config was refused,
	                     one per line; 413 over 4MiB
	GET  /debug/pprof/   net/http/pprof: index, profiles, cmdline, symbol, trace

With auth on, every admin endpoint but /healthz and /readyz takes the same
bearer token as the data API (401 without it): probes need no secret, and
/load, /config and pprof are not open to whoever reaches the port.
*/
package httpapi
