package load

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Defaults of the HTTP driver: the published comparison's `vegeta attack -rate=0 -workers=250`.
const (
	DefaultHTTPWorkers = 250
	DefaultHTTPTimeout = 30 * time.Second // vegeta's own default
)

// HTTP drives pgcache's HTTP data API with vegeta's attacker at the
// highest rate Workers can reach: `GET /{route}/get?id=K` and
// `POST /{route}/set?id=K` with the value as the body.
type HTTP struct {
	Addr    string // host:port of the HTTP front
	Route   string // the route's name, the first segment of the path
	Workers uint64 // concurrent requests; 0: DefaultHTTPWorkers
	Timeout time.Duration
}

// Proto is "http".
func (d *HTTP) Proto() string { return "http" }

// Shape describes the load.
func (d *HTTP) Shape() string { return fmt.Sprintf("vegeta, rate=0 (max), %d workers", d.workers()) }

func (d *HTTP) workers() uint64 {
	if d.Workers == 0 {
		return DefaultHTTPWorkers
	}
	return d.Workers
}

// Run runs one phase. Vegeta's rate 0 means "as fast as the workers go";
// MaxWorkers pins the worker count, since with rate 0 the attacker
// otherwise adds a worker whenever all are busy, without bound.
func (d *HTTP) Run(ctx context.Context, p Plan, prog *Progress) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	timeout := d.Timeout
	if timeout == 0 {
		timeout = DefaultHTTPTimeout
	}
	urls, method := d.urls(&p)
	var next atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if p.Requests > 0 && i >= p.Requests {
			return vegeta.ErrNoTargets
		}
		k := int(i % uint64(len(urls)))
		t.Method, t.URL = method, urls[k]
		if p.Op == Set {
			t.Body = p.Value(k)
		}
		return nil
	}
	w := d.workers()
	// vegeta's own client, but with a transport the phase can close: the
	// workers' keep-alive connections are closed when the phase ends, so
	// they do not linger into the next phase or hold pgcache's shutdown.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: int(w),
	}
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Transport: tr}),
		vegeta.Workers(w),
		vegeta.MaxWorkers(w),
		vegeta.Timeout(timeout),
		vegeta.Redirects(vegeta.NoFollow),
	)
	rec := newRecorder(time.Now())
	sh := rec.shard()
	stopProgress := prog.watch(&p, rec)
	stopWatch := context.AfterFunc(ctx, func() { atk.Stop() })

	var m vegeta.Metrics
	for res := range atk.Attack(targeter, vegeta.Rate{Freq: 0, Per: time.Second}, p.Duration, p.Name) {
		// Once the targeter runs dry, each worker that asks again gets a
		// result carrying ErrNoTargets: no request was sent for it (the
		// "0:" codes in the published comparison's SET reports). It is not a request.
		if res.Code == 0 && res.Error == vegeta.ErrNoTargets.Error() {
			continue
		}
		m.Add(res)
		ok := res.Code >= 200 && res.Code < 400
		sh.record(res.Timestamp, res.Latency, statusText(res.Code), ok, res.Error, res.BytesIn, res.BytesOut)
	}
	stopWatch()
	stopProgress()
	m.Close()
	out := rec.result()
	out.Metrics = m // vegeta's own numbers; the recorder gives the timeline
	out.Interrupted = interrupted(ctx)
	return out, nil
}

// urls builds each key's URL once, so the attack loop does not.
func (d *HTTP) urls(p *Plan) ([]string, string) {
	action, method := "get", "GET"
	if p.Op == Set {
		action, method = "set", "POST"
	}
	base := "http://" + d.Addr + "/" + url.PathEscape(d.Route) + "/" + action + "?id="
	urls := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		urls[i] = base + url.QueryEscape(k)
	}
	return urls, method
}
