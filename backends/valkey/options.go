package valkey

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/internal/certs"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/rawio"
)

// Defaults of Options.
const (
	DefaultAddr                = "127.0.0.1:6379"
	DefaultDialTimeout         = 2 * time.Second
	DefaultCommandTimeout      = 2 * time.Second
	DefaultClientCacheTTL      = time.Minute
	DefaultClientCacheMaxBytes = 64 << 20
)

// maxConnsPerNode is valkey-go's bound: 2^MaxPipelineMultiplex.
const maxConnsPerNode = 1 << valkey.MaxPipelineMultiplex

// Options are the valkey backend's config.
type Options struct {
	// Addrs are a standalone server, or seed nodes of a cluster: valkey-go
	// asks them for the topology and detects cluster mode by itself.
	// Default [127.0.0.1:6379].
	Addrs []string `mapstructure:"addrs"`
	// Username and Password authenticate each connection (AUTH); empty: none.
	Username string `mapstructure:"username"`
	Password string `mapstructure:"password"`
	// TLS encrypts the connections. Default off.
	TLS TLSOptions `mapstructure:"tls"`
	// DialTimeout bounds one connection attempt. Default 2s.
	DialTimeout decode.Duration `mapstructure:"dial_timeout"`
	// CommandTimeout bounds every call, a reconnection it waits for
	// included: a server that is down makes calls fail with
	// backends.ErrUnavailable within it. It is also how long a connection
	// may leave a request unanswered before it is declared dead (valkey-go's
	// ConnWriteTimeout), which bounds how long the client cache trusts a
	// server that went silent. Default 2s.
	CommandTimeout decode.Duration `mapstructure:"command_timeout"`
	// ConnsPerNode is how many pipelined connections go to each server, a
	// power of two up to 256. Default 0: valkey-go's choice (2 or 4 to a
	// standalone server, by GOMAXPROCS; 1 to each cluster node).
	ConnsPerNode int `mapstructure:"conns_per_node"`
	// ClientCache, when present, serves reads from an in-process cache kept
	// coherent by the server (RESP3 client tracking). Default off.
	ClientCache *ClientCacheOptions `mapstructure:"client_cache"`
	// RawKeys stores keys exactly as the route names them, so the data is
	// the one plain clients see; then only one route may use the backend.
	// Default false: a route's keys are stored as "<route name>:<key>", so
	// routes sharing the backend never collide. See Driver.Open.
	RawKeys bool `mapstructure:"raw_keys"`
}

// TLSOptions configure TLS to the servers.
type TLSOptions struct {
	// Enabled turns TLS on; the other fields need it. Default false.
	Enabled bool `mapstructure:"enabled"`
	// CAFile is a PEM bundle of the roots to trust. Default: the system's.
	CAFile string `mapstructure:"ca_file"`
	// CertFile and KeyFile are a client certificate (mutual TLS): both or neither.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ServerName is the name to verify. Default: the host of each address.
	ServerName string `mapstructure:"server_name"`
	// InsecureSkipVerify accepts any certificate. For tests only.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`
}

// ClientCacheOptions configure the client-side cache (see clientcache.go).
// It applies to every route of the backend.
type ClientCacheOptions struct {
	// TTL is how long a value may be served without asking the server; a
	// key's own expiry shortens it. Default 1m.
	TTL decode.Duration `mapstructure:"ttl"`
	// MaxBytes bounds the cache, across all connections. Default 64MiB.
	MaxBytes decode.ByteSize `mapstructure:"max_bytes"`
}

// setDefaults fills in what the config left out.
func (o *Options) setDefaults() {
	if len(o.Addrs) == 0 {
		o.Addrs = []string{DefaultAddr}
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = decode.Duration(DefaultDialTimeout)
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = decode.Duration(DefaultCommandTimeout)
	}
	if o.ClientCache != nil {
		cc := *o.ClientCache // the caller's struct stays as it was
		if cc.TTL == 0 {
			cc.TTL = decode.Duration(DefaultClientCacheTTL)
		}
		if cc.MaxBytes == 0 {
			cc.MaxBytes = DefaultClientCacheMaxBytes
		}
		o.ClientCache = &cc
	}
}

// validate checks the options after setDefaults: every problem, one per
// line, each naming the field.
func (o *Options) validate() error {
	var errs []error
	for i, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("addrs[%d]: %q is not host:port", i, a))
		}
	}
	for _, d := range []struct {
		field string
		v     decode.Duration
	}{{"dial_timeout", o.DialTimeout}, {"command_timeout", o.CommandTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %q must be positive", d.field, d.v))
		}
	}
	if n := o.ConnsPerNode; n < 0 || n > maxConnsPerNode || n&(n-1) != 0 {
		errs = append(errs, fmt.Errorf("conns_per_node: %d must be a power of two up to %d", n, maxConnsPerNode))
	}
	if cc := o.ClientCache; cc != nil {
		if cc.TTL < 0 {
			errs = append(errs, fmt.Errorf("client_cache.ttl: %q must be positive", cc.TTL))
		}
		if cc.MaxBytes < 0 {
			errs = append(errs, fmt.Errorf("client_cache.max_bytes: %d must be positive", cc.MaxBytes))
		}
	}
	errs = append(errs, o.TLS.validate())
	return errors.Join(errs...)
}

func (t *TLSOptions) validate() error {
	if !t.Enabled {
		if *t != (TLSOptions{}) {
			return errors.New("tls: options are set but tls.enabled is false")
		}
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("tls: cert_file and key_file go together")
	}
	return nil
}

// config builds the tls.Config, reading the files.
func (t *TLSOptions) config() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		pool, err := certs.Pool(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// clientOption translates the options into valkey-go's, less the cache store
// (newDriver adds it).
func (o *Options) clientOption() (valkey.ClientOption, error) {
	opt := valkey.ClientOption{
		InitAddress:       o.Addrs,
		Username:          o.Username,
		Password:          o.Password,
		ClientName:        "pgcache",
		Dialer:            net.Dialer{Timeout: time.Duration(o.DialTimeout)},
		ConnWriteTimeout:  time.Duration(o.CommandTimeout),
		PipelineMultiplex: pipelineMultiplex(o.ConnsPerNode),
		DisableCache:      o.ClientCache == nil,
		RetryDelay:        retryDelay,
		DialCtxFn:         dial,
	}
	if o.TLS.Enabled {
		cfg, err := o.TLS.config()
		if err != nil {
			return valkey.ClientOption{}, err
		}
		opt.TLSConfig = cfg
	}
	return opt, nil
}

// dial connects as valkey-go does, and a plain TCP connection reads and
// writes with raw system calls (see package rawio).
func dial(ctx context.Context, dst string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if tc != nil {
		td := tls.Dialer{NetDialer: d, Config: tc}
		return td.DialContext(ctx, "tcp", dst)
	}
	nc, err := d.DialContext(ctx, "tcp", dst)
	if err != nil {
		return nil, err
	}
	return rawio.Wrap(nc), nil
}

// pipelineMultiplex turns a connection count into valkey-go's exponent,
// where 0 means "choose" and a negative value one connection.
func pipelineMultiplex(conns int) int {
	switch conns {
	case 0:
		return 0
	case 1:
		return -1
	}
	return bits.TrailingZeros(uint(conns))
}

// Reads are retried by valkey-go on network errors (writes never are, as
// they may have been applied). A few quick retries ride out a connection
// that broke while idle; more would only keep a caller waiting on a server
// that is down, where failing fast with ErrUnavailable is the answer.
const (
	maxReadRetries = 2
	retryBackoff   = 5 * time.Millisecond
)

func retryDelay(attempts int, _ valkey.Completed, err error) time.Duration {
	if attempts > maxReadRetries || errors.Is(err, errRefetch) {
		return -1 // no retry; errRefetch is answered by an uncached read instead
	}
	return time.Duration(attempts) * retryBackoff
}
