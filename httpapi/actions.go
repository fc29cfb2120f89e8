package httpapi

import (
	"encoding/base64"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Every key passed to a backend below is b2s of a query argument (or the
// route's canonical spelling of one, a string of its own). That is safe: fasthttp keeps the request's parsed arguments unchanged until the
// handler returns, and a Backend borrows a key only for the call (a backend
// that keeps one copies it; see backends.Backend). So is passing the request
// body as a value, for the same two reasons.

// get answers the value of one key: GET /{route}/get?id=K.
func (d *Data) get(ctx *fasthttp.RequestCtx, r *route.Route) {
	q, reason := parseQuery(ctx, actionGet, r, nil)
	if reason != "" {
		replyError(ctx, fasthttp.StatusBadRequest, reason)
		return
	}
	if q.ids > 1 {
		replyError(ctx, fasthttp.StatusBadRequest, "get takes one id: use mget for several")
		return
	}
	v, ok, err := r.Backend.Get(d.ctx, q.key)
	if err != nil {
		replyBackendError(ctx, r, err)
		return
	}
	if !ok {
		replyError(ctx, fasthttp.StatusNotFound, "not found")
		return
	}
	ctx.SetContentType(contentTypeValue)
	// A backend never modifies a value it returned, so the response may
	// send it as is instead of copying it.
	ctx.Response.SetBodyRaw(v)
}

// set stores the body under one key: POST|PUT /{route}/set?id=K[&ttl=S].
// Without ttl the key has no expiry, like Redis's SET: an expiry it had is
// dropped.
func (d *Data) set(ctx *fasthttp.RequestCtx, r *route.Route) {
	q, reason := parseQuery(ctx, actionSet, r, nil)
	if reason != "" {
		replyError(ctx, fasthttp.StatusBadRequest, reason)
		return
	}
	if q.ids > 1 {
		replyError(ctx, fasthttp.StatusBadRequest, "set takes one id")
		return
	}
	var opts backends.SetOptions
	if q.ttl != nil {
		secs, ok := backends.ParseInt(q.ttl)
		if !ok || secs <= 0 || secs > maxTTLSeconds {
			replyError(ctx, fasthttp.StatusBadRequest, "ttl must be a whole number of seconds > 0, not "+quoteInput(q.ttl))
			return
		}
		opts.TTL = backends.TTL{Mode: backends.TTLRelative, D: time.Duration(secs) * time.Second}
	}
	if enc := ctx.Request.Header.ContentEncoding(); len(enc) > 0 && b2s(enc) != "identity" {
		// Storing the compressed bytes would hand a reader something other
		// than what the writer meant; decoding would let a small request
		// grow past MaxBodyBytes.
		replyError(ctx, fasthttp.StatusUnsupportedMediaType,
			"Content-Encoding "+quoteInput(enc)+" not supported: send the value as is")
		return
	}
	val := ctx.PostBody()
	if val == nil {
		val = emptyValue // an empty value is present, never nil (backends.Backend)
	}
	res, err := r.Backend.Set(d.ctx, q.key, val, opts)
	if err != nil {
		replyBackendError(ctx, r, err)
		return
	}
	if !res.Stored {
		// An unconditional set always stores; a backend that says otherwise
		// did not write, and a write that did not happen never answers 2xx.
		replyError(ctx, fasthttp.StatusServiceUnavailable, "backend "+r.BackendName+" did not store the value")
		return
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// maxTTLSeconds is the longest ttl a time.Duration holds (about 292 years).
const maxTTLSeconds = math.MaxInt64 / int64(time.Second)

// emptyValue is the value of a set with no body. Backends borrow it and
// never write to it.
var emptyValue = []byte{}

// del removes keys and answers how many existed: DELETE|POST
// /{route}/del?id=K[&id=K2…]. A key named twice counts once.
func (d *Data) del(ctx *fasthttp.RequestCtx, r *route.Route) {
	s := getScratch()
	defer putScratch(s)
	_, reason := parseQuery(ctx, actionDel, r, &s.keys)
	if reason != "" {
		replyError(ctx, fasthttp.StatusBadRequest, reason)
		return
	}
	n, err := r.Backend.Del(d.ctx, s.keys)
	if err != nil {
		replyBackendError(ctx, r, err)
		return
	}
	ctx.SetContentType(contentTypeText)
	s.buf = strconv.AppendInt(s.buf[:0], n, 10)
	ctx.SetBody(s.buf)
}

// mget answers the values of keys as a JSON array in the order the ids came,
// duplicates included: each value base64 (RFC 4648 standard alphabet,
// padded, as encoding/json writes []byte), null for an absent key.
// GET /{route}/mget?id=K1&id=K2…
func (d *Data) mget(ctx *fasthttp.RequestCtx, r *route.Route) {
	s := getScratch()
	defer putScratch(s)
	_, reason := parseQuery(ctx, actionMGet, r, &s.keys)
	if reason != "" {
		replyError(ctx, fasthttp.StatusBadRequest, reason)
		return
	}
	vals, err := r.Backend.MGet(d.ctx, s.keys, s.vals[:0])
	s.vals = vals
	if err != nil {
		replyBackendError(ctx, r, err)
		return
	}
	b := append(s.buf[:0], '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		if v == nil {
			b = append(b, "null"...)
			continue
		}
		// Base64 needs no JSON escaping: its alphabet is letters, digits, +, / and =.
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		b = append(b, '"')
	}
	b = append(b, ']')
	s.buf = b
	ctx.SetContentType(contentTypeJSON)
	ctx.SetBody(b)
}

// query is a data request's arguments, viewed in place: each slice points
// into the request and is valid until the handler returns.
type query struct {
	key string // the first id, as the route's backend stores it (route.Route.Key)
	ids int    // how many ids were given
	ttl []byte // set only; nil when absent
}

// parseQuery reads the query string of action a on route r, appending every
// id, as r stores it, to keys when keys is not nil. An unknown, repeated
// (other than id) or empty argument is refused with a reason: a mistyped ttl
// must not store a key that never expires. So is an id r cannot hold.
func parseQuery(ctx *fasthttp.RequestCtx, a action, r *route.Route, keys *[]string) (q query, reason string) {
	for k, v := range ctx.QueryArgs().All() {
		switch b2s(k) {
		case "id":
			if len(v) == 0 {
				return q, "empty id"
			}
			key, err := r.Key(b2s(v))
			if err != nil {
				return q, "id " + quoteInput(v) + ": " + err.Error()
			}
			if q.ids == 0 {
				q.key = key
			}
			q.ids++
			if keys != nil {
				*keys = append(*keys, key)
			}
		case "ttl":
			if a != actionSet {
				return q, "unknown parameter \"ttl\": only set takes one"
			}
			if q.ttl != nil {
				return q, "ttl given twice"
			}
			q.ttl = v
			if q.ttl == nil {
				q.ttl = emptyValue // present but empty: refused by the ttl check
			}
		default:
			return q, "unknown parameter " + quoteInput(k)
		}
	}
	if q.ids == 0 {
		return q, "missing id"
	}
	return q, ""
}

// scratch holds the buffers of a multi-key request, pooled so that a steady
// load of mget and del does not allocate them.
type scratch struct {
	keys []string
	vals [][]byte
	buf  []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledBuf keeps one huge mget answer from pinning its buffer in the pool.
const maxPooledBuf = 64 << 10

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	// Drop the references: the keys point into a request fasthttp will
	// reuse, and the values may be large.
	clear(s.keys)
	clear(s.vals)
	s.keys, s.vals = s.keys[:0], s.vals[:0]
	if cap(s.buf) > maxPooledBuf {
		s.buf = nil
	}
	scratchPool.Put(s)
}
