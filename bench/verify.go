package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/bench/instance"
)

// verifyTimeout bounds reading the sample back.
const verifyTimeout = 30 * time.Second

// verify reads a sample of the keys back through the front the phase
// used and checks that each decodes to what was written: a run whose
// requests all succeeded could still have stored the wrong thing.
func (r *runner) verify(ctx context.Context, e *Engine, proto string, inst instance.Instance, raw []string) error {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	n := min(DefaultVerifySample, len(raw))
	var rc *redis.Client
	if proto == ProtoRESP {
		rc = pgcacheClient(inst.Addr("resp"))
		defer rc.Close()
	}
	for j := range n {
		i := j * len(raw) / n // spread over the key range
		var val []byte
		var err error
		if rc != nil {
			val, err = rc.Get(ctx, e.Prefix+raw[i]).Bytes()
		} else {
			val, err = httpGet(ctx, inst.Addr("http"), e.Route, raw[i])
		}
		if err != nil {
			return fmt.Errorf("read back %s: %w", raw[i], err)
		}
		if err := e.check(val, i, raw[i]); err != nil {
			return err
		}
	}
	return nil
}

// httpGet reads one value over the HTTP data API.
func httpGet(ctx context.Context, addr, route, key string) ([]byte, error) {
	u := "http://" + addr + "/" + url.PathEscape(route) + "/get?id=" + url.QueryEscape(key)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %s", u, resp.Status, b)
	}
	return b, nil
}

// pgcacheClient is a Redis client of pgcache's RESP front.
func pgcacheClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, Protocol: 2, MaxRetries: -1})
}

// delBatch is how many keys one DEL names.
const delBatch = 1000

// deleteKeys deletes keys through pgcache's RESP front, a batch per DEL,
// the batches pipelined: the route maps each key as it would a SET's.
func deleteKeys(ctx context.Context, addr string, keys []string) error {
	rc := pgcacheClient(addr)
	defer rc.Close()
	pipe := rc.Pipeline()
	for lo := 0; lo < len(keys); lo += delBatch {
		pipe.Del(ctx, keys[lo:min(lo+delBatch, len(keys))]...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete the keys of earlier runs: %w", err)
	}
	return nil
}

// readL1 reads the L1 counters of route from pgcache's INFO.
func readL1(ctx context.Context, addr, route string) (instance.L1Reads, error) {
	rc := pgcacheClient(addr)
	defer rc.Close()
	info, err := rc.Info(ctx, "backends").Result()
	if err != nil {
		return instance.L1Reads{}, fmt.Errorf("INFO backends: %w", err)
	}
	return instance.ParseL1Reads(info, route)
}
