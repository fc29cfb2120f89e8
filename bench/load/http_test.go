package load

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A count-bound SET sends exactly its count: the results vegeta makes for
// workers that found the targets exhausted are not requests.
func TestHTTPSetThenGet(t *testing.T) {
	s := startPgcache(t)
	d := &HTTP{Addr: s.Addr("http"), Route: "memory", Workers: 20}
	keys := testKeys("", 300)
	res, err := d.Run(context.Background(), Plan{Name: "set", Op: Set, Keys: keys, Value: value,
		Requests: uint64(len(keys)), Duration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metrics; m.Requests != 300 || m.Success != 1 || m.StatusCodes["204"] != 300 {
		t.Fatalf("set: requests %d, success %v, codes %v, errors %v; want 300 x 204", m.Requests, m.Success, m.StatusCodes, m.Errors)
	}
	res, err = d.Run(context.Background(), Plan{Name: "get", Op: Get, Keys: keys, Duration: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m.Requests == 0 || m.Success != 1 || m.StatusCodes["200"] != int(m.Requests) {
		t.Fatalf("get: requests %d, success %v, codes %v", m.Requests, m.Success, m.StatusCodes)
	}
	if m.BytesIn.Total == 0 || len(res.Timeline) == 0 || res.Timeline[0].Requests == 0 || res.Timeline[0].P99 < res.Timeline[0].P50 {
		t.Fatalf("get: bytes in %d, timeline %+v", m.BytesIn.Total, res.Timeline)
	}
}

// A miss is a 404, which vegeta counts as a failure.
func TestHTTPMissFails(t *testing.T) {
	s := startPgcache(t)
	d := &HTTP{Addr: s.Addr("http"), Route: "memory", Workers: 4}
	res, err := d.Run(context.Background(), Plan{Name: "get", Op: Get, Keys: []string{"absent"}, Requests: 10, Duration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metrics; m.Requests != 10 || m.Success != 0 || m.StatusCodes["404"] != 10 {
		t.Fatalf("requests %d, success %v, codes %v", m.Requests, m.Success, m.StatusCodes)
	}
}

// Cancelling ctx stops vegeta's attack and marks the phase interrupted.
func TestHTTPInterrupted(t *testing.T) {
	s := startPgcache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	d := &HTTP{Addr: s.Addr("http"), Route: "memory", Workers: 4}
	start := time.Now()
	res, err := d.Run(ctx, Plan{Name: "get", Op: Get, Keys: []string{"absent"}, Duration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || time.Since(start) > 10*time.Second {
		t.Fatalf("interrupted %v after %v", res.Interrupted, time.Since(start))
	}
}

func TestPlanValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan Plan
		want string
	}{
		{"no keys", Plan{Name: "p", Duration: time.Second}, "no keys"},
		{"no duration", Plan{Name: "p", Keys: []string{"k"}}, "duration"},
		{"set without values", Plan{Name: "p", Op: Set, Keys: []string{"k"}, Duration: time.Second}, "needs values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&HTTP{Addr: "127.0.0.1:1"}).Run(context.Background(), tc.plan, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
