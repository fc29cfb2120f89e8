package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// valkeyServer is the Valkey (or Redis) the valkey engine stores in: a
// throwaway server the bench started (and stops), or --valkey-addr, which
// it leaves as configured.
type valkeyServer struct {
	addr   string
	owned  *testenv.Redis
	desc   string
	caps   string
	tuning map[string]string
}

// valkeyTuning is the published comparison's valkey.conf for a pure cache, applied with
// CONFIG SET to a throwaway server (testenv already runs it with save ""
// and appendonly no). io-threads can only be set at start-up, and a
// throwaway server is started by testenv without it: the report says so.
var valkeyTuning = [][2]string{
	{"maxmemory", "3gb"}, // 75% of the 4 GB cap
	{"maxmemory-policy", "allkeys-lru"},
}

const valkeyTimeout = 5 * time.Second

func startValkey(ctx context.Context, o *Options, note io.Writer) (*valkeyServer, error) {
	s := &valkeyServer{addr: o.ValkeyAddr, caps: "none: an existing server (--valkey-addr) is left as it is"}
	if s.addr == "" {
		fmt.Fprintln(note, "starting a throwaway Valkey/Redis …")
		r, err := testenv.StartRedis()
		if err != nil {
			return nil, fmt.Errorf("valkey: %w", err)
		}
		s.owned, s.addr = r, r.Addr()
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr, DialTimeout: valkeyTimeout, ReadTimeout: valkeyTimeout,
		MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		s.close()
		return nil, fmt.Errorf("valkey %s: cannot connect: %w", s.addr, err)
	}
	info, _ := c.Info(ctx, "server").Result()
	version := infoField(info, "valkey_version")
	server := "Valkey"
	if version == "" {
		version, server = infoField(info, "redis_version"), "Redis"
	}
	if s.owned == nil {
		s.desc = fmt.Sprintf("existing server %s, %s %s, settings left as they are", s.addr, server, version)
	} else {
		for _, kv := range valkeyTuning {
			if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				s.close()
				return nil, fmt.Errorf("valkey: CONFIG SET %s %s: %w", kv[0], kv[1], err)
			}
		}
		s.desc = fmt.Sprintf("throwaway server on %s, %s %s (save \"\", appendonly no; io-threads not set: start-up only)", s.addr, server, version)
		s.caps = "none: --no-caps"
		if !o.NoCaps {
			pid, _ := strconv.Atoi(infoField(info, "process_id"))
			s.caps = capProcesses(ctx, fmt.Sprintf("pgcache-bench-valkey-%d.scope", s.owned.Port), testenv.ProcessTree(pid))
		}
	}
	s.tuning = map[string]string{}
	for _, name := range []string{"maxmemory", "maxmemory-policy", "io-threads", "save", "appendonly"} {
		if v, err := c.ConfigGet(ctx, name).Result(); err == nil {
			s.tuning[name] = v[name]
		}
	}
	return s, nil
}

// infoField reads "field:value" from an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

func (s *valkeyServer) close() error {
	if s.owned != nil {
		return s.owned.Stop()
	}
	return nil
}
