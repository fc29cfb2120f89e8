package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// L1Tier is one route's coherent L1 as GET /debug/l1 lists it;
// *coherence.Tier is one.
type L1Tier interface {
	// Route names the route the tier serves.
	Route() string
	// Proven is a time before which every fence logged in the database has
	// reached the tier; zero until the first canary came back.
	Proven() time.Time
	// Entries calls fn for each entry the tier would serve now, until fn
	// returns false. No lock may be held while fn runs: fn writes to a
	// client that may be slow.
	Entries(fn func(key string, val []byte) bool)
}

// Headers of GET /debug/l1.
const (
	// headerL1Proven is the earliest Proven of the tiers listed, taken
	// before the first entry is read: every write that committed before it
	// had fenced these tiers by then. Absent while a tier has proven nothing.
	headerL1Proven = "Pgcache-L1-Proven"
	// headerL1Entries is a trailer: the number of entries sent, present only
	// when the listing ran to its end, so a cut stream cannot pass for a
	// short one.
	headerL1Entries = "Pgcache-L1-Entries"
)

const (
	contentTypeNDJSON = "application/x-ndjson"
	// l1BufferBytes is what the listing buffers before it writes to the
	// connection: memory is bounded by it, not by the number of entries.
	l1BufferBytes = 32 << 10
	// l1StallTimeout replaces the admin write timeout for a listing: a
	// listing of a large L1 may take longer, for as long as the client
	// takes each buffer within this.
	l1StallTimeout = 30 * time.Second
)

// l1Line is one entry of the listing. Key and value are JSON strings when
// they are valid UTF-8 (a table route's value is the row's JSON text), and
// base64 otherwise, so that what a client decodes is byte for byte what
// the tier holds: exactly one of key and key_base64 is present, and of
// value and value_base64.
type l1Line struct {
	Route       string  `json:"route"`
	Key         *string `json:"key,omitempty"`
	KeyBase64   []byte  `json:"key_base64,omitempty"`
	Value       *string `json:"value,omitempty"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
}

// debugL1 streams every entry of every coherent L1 (of the route named by
// ?route= only, when given) as newline-delimited JSON, tier by tier in route
// order. Entries are read as they are written out: memory stays bounded
// by the buffer, and the tiers keep serving while a client reads.
func (a *Admin) debugL1(w http.ResponseWriter, r *http.Request) {
	if a.opts.L1 == nil {
		text(w, http.StatusNotImplemented, "l1 listing is not available")
		return
	}
	tiers := a.opts.L1()
	q := r.URL.Query()
	if q.Has("route") {
		name := q.Get("route")
		tiers = slices.DeleteFunc(tiers, func(t L1Tier) bool { return t.Route() != name })
		if len(tiers) == 0 {
			text(w, http.StatusNotFound, "route "+strconv.Quote(name)+" has no l1")
			return
		}
	}
	slices.SortFunc(tiers, func(x, y L1Tier) int { return strings.Compare(x.Route(), y.Route()) })

	h := w.Header()
	h.Set("Content-Type", contentTypeNDJSON)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p := earliestProven(tiers); !p.IsZero() {
		h.Set(headerL1Proven, p.UTC().Format(time.RFC3339Nano))
	}
	h.Set("Trailer", headerL1Entries)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}

	bw := bufio.NewWriterSize(&stallWriter{w: w, rc: http.NewResponseController(w)}, l1BufferBytes)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var sent int64
	var err error
	for _, t := range tiers {
		route := t.Route()
		t.Entries(func(key string, val []byte) bool {
			if err = enc.Encode(newL1Line(route, key, val)); err != nil {
				return false
			}
			sent++
			return true
		})
		if err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		// The client went away or stalled: the missing trailer tells a
		// client that kept reading that the listing is cut.
		a.log.Debug("l1 listing cut", zap.Error(err))
		return
	}
	h.Set(headerL1Entries, strconv.FormatInt(sent, 10))
}

func newL1Line(route, key string, val []byte) l1Line {
	l := l1Line{Route: route}
	if utf8.ValidString(key) {
		l.Key = &key
	} else {
		l.KeyBase64 = []byte(key)
	}
	if utf8.Valid(val) {
		v := string(val)
		l.Value = &v
	} else {
		l.ValueBase64 = val
	}
	return l
}

// earliestProven is the earliest Proven of tiers, zero when one is zero.
func earliestProven(tiers []L1Tier) time.Time {
	var p time.Time
	for i, t := range tiers {
		tp := t.Proven()
		if tp.IsZero() {
			return time.Time{}
		}
		if i == 0 || tp.Before(p) {
			p = tp
		}
	}
	return p
}

// stallWriter gives each write to the connection l1StallTimeout of its own.
type stallWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (s *stallWriter) Write(p []byte) (int, error) {
	// ErrNotSupported leaves the admin write timeout in force.
	_ = s.rc.SetWriteDeadline(time.Now().Add(l1StallTimeout))
	return s.w.Write(p)
}
