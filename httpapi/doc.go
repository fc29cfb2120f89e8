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

# Admin API (loopback, DefaultAdminAddr)

	GET  /healthz        200 "ok" while the process is up
	GET  /readyz         200 "ok"; 503 one line per backend that cannot serve
	GET  /metrics        Prometheus text format
	GET  /config         200 the running config as JSON, secrets redacted
	POST /load           200 "ok"; 400 the reason the config was refused;
	                     413 over 4MiB; 501 until reload is wired
	GET  /debug/pprof/   net/http/pprof: index, profiles, cmdline, symbol, trace
*/
package httpapi
