package conf

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/pgcache/pgcache/internal/decode"
)

// EnvPrefix starts every environment variable pgcache reads. A double
// underscore separates levels, since keys have single underscores of their
// own: PGCACHE_LISTEN__RESP=127.0.0.1:7000, PGCACHE_RESP__MAX_CLIENTS=100,
// PGCACHE_BACKENDS__PG__DSN=postgres://….
const EnvPrefix = "PGCACHE_"

// flagKeys are the command-line flags that set config keys.
var flagKeys = map[string]string{
	"listen-resp":      "listen.resp",
	"listen-http":      "listen.http",
	"listen-admin":     "listen.admin",
	"listen-resp-unix": "listen.resp_unix",
	"log-level":        "log.level",
	"log-format":       "log.format",
}

// AddFlags defines the flags Load reads on fs.
func AddFlags(fs *pflag.FlagSet) {
	fs.String("listen-resp", DefaultRESPAddr, `RESP listen address ("" turns it off)`)
	fs.String("listen-http", DefaultHTTPAddr, `HTTP data API listen address ("" turns it off)`)
	fs.String("listen-admin", DefaultAdminAddr, `admin API listen address ("" turns it off)`)
	fs.String("listen-resp-unix", "", "Unix socket path to serve RESP on too")
	fs.String("log-level", DefaultLogLevel, "log level: debug, info, warn, error")
	fs.String("log-format", DefaultLogFormat, "log format: auto, json or console")
}

// Source says where Load reads from. Every field is optional.
type Source struct {
	// File is a YAML config file; "" means none (the embedded default).
	File string
	// Bytes, when not nil, is read in place of File: a YAML (or JSON)
	// config posted to the admin API's /load.
	Bytes []byte
	// Flags are parsed flags defined with AddFlags.
	Flags *pflag.FlagSet
	// Environ replaces os.Environ (tests).
	Environ func() []string
}

// Load reads, decodes, fills in and validates the configuration.
func Load(src Source) (*Config, error) {
	cfg, err := Decode(src)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Decode is Load without validation, for a tool that only needs a few
// settings of a config another process checks (`pgcache reload` reads the
// admin address and token).
func Decode(src Source) (*Config, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(defaultsMap(), "."), nil); err != nil {
		return nil, err
	}
	switch {
	case src.Bytes != nil:
		m, err := yaml.Parser().Unmarshal(src.Bytes)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := k.Load(confmap.Provider(m, ""), nil); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	case src.File != "":
		if _, err := os.Stat(src.File); err != nil {
			return nil, fmt.Errorf("config file: %w", err)
		}
		if err := k.Load(file.Provider(src.File), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("config file %s: %w", src.File, err)
		}
	}
	environ := src.Environ
	if environ == nil {
		environ = os.Environ
	}
	if err := k.Load(env.Provider(".", env.Opt{
		Prefix:        EnvPrefix,
		TransformFunc: envKey,
		EnvironFunc:   environ,
	}), nil); err != nil {
		return nil, err
	}
	if src.Flags != nil {
		if err := k.Load(posflag.ProviderWithFlag(src.Flags, ".", k, func(f *pflag.Flag) (string, any) {
			key, ok := flagKeys[f.Name]
			if !ok {
				return "", nil
			}
			return key, f.Value.String()
		}), nil); err != nil {
			return nil, err
		}
	}
	cfg, err := decodeConfig(k)
	if err != nil {
		return nil, err
	}
	if len(cfg.Routes) == 0 && len(cfg.Backends) == 0 {
		defaultRoutes(cfg)
	}
	cfg.TLS.fill()
	return cfg, nil
}

// envKey maps PGCACHE_RESP__MAX_CLIENTS to resp.max_clients.
func envKey(k, v string) (string, any) {
	k = strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
	return strings.ReplaceAll(k, "__", "."), v
}

func decodeConfig(k *koanf.Koanf) (*Config, error) {
	var cfg Config
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			ErrorUnused:      true,
			WeaklyTypedInput: true,
			DecodeHook:       decode.Hook,
			Result:           &cfg,
			TagName:          "koanf",
		},
	})
	if err != nil {
		return nil, decode.Clean(err, "conf.Config")
	}
	return &cfg, nil
}
