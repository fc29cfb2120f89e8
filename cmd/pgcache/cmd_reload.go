package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pgcache/pgcache/conf"
)

func init() {
	register(command{
		name:  "reload",
		usage: "--config FILE [--admin ADDR] [--token T] [--cacert FILE]",
		short: "send a config file to a running pgcache (POST /load); it swaps it in or says why not",
		run:   cmdReload,
	})
}

// cmdReload posts a config file to the admin API of the pgcache that
// serves it. The file is not validated here: the server does, under its
// own environment (which may hold the secrets), and answers every reason.
// The admin address, the token and the TLS settings are read from the
// file and PGCACHE_* variables unless flags give them.
func cmdReload(args []string, stdout, stderr io.Writer) int {
	fs := commands["reload"].flags(stderr)
	file := fs.String("config", "", "YAML config file to load (required)")
	admin := fs.String("admin", "", "admin API address or URL (default: listen.admin of the config)")
	token := fs.String("token", "", "bearer token (default: auth.http_token, auth.requirepass or the first auth.users password of the config)")
	cacert := fs.String("cacert", "", "CA certificate to verify the admin API's TLS certificate with (when tls.fronts has admin)")
	clientCert := fs.String("cert", "", "client certificate, when the admin API asks for one (tls.client_ca_file)")
	clientKey := fs.String("key", "", "the client certificate's key")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the reload")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *file == "" {
		fmt.Fprintln(stderr, "pgcache reload: --config is required")
		fs.Usage()
		return exitUsage
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache reload: %v\n", err)
		return exitError
	}
	cfg, err := conf.Decode(conf.Source{Bytes: body})
	if err != nil {
		fmt.Fprintf(stderr, "pgcache reload: %s:\n%v\n", *file, err)
		return exitError
	}
	useTLS := cfg.TLS.Serves(conf.FrontAdmin)
	url, err := loadURL(*admin, cfg.Listen.Admin, useTLS)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache reload: %v\n", err)
		return exitUsage
	}
	client := &http.Client{Timeout: *timeout}
	if strings.HasPrefix(url, "https://") {
		tc, err := clientTLS(*cacert, *clientCert, *clientKey)
		if err != nil {
			fmt.Fprintf(stderr, "pgcache reload: %v\n", err)
			return exitError
		}
		client.Transport = &http.Transport{TLSClientConfig: tc}
	}

	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "pgcache reload: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Content-Type", "application/yaml")
	if t := firstNonEmpty(*token, bearerOf(cfg)); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache reload: %v\n", err)
		return exitError
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "pgcache reload: %s refused the config (%s):\n%s", url, resp.Status, reply)
		return exitError
	}
	fmt.Fprintf(stdout, "config %s loaded\n", *file)
	return exitOK
}

// loadURL is the /load URL for a flag value (host:port or a URL) or, when
// empty, the config's admin address. An unspecified host (":2019",
// "0.0.0.0:2019") is reached on loopback.
func loadURL(flag, listen string, useTLS bool) (string, error) {
	if strings.HasPrefix(flag, "http://") || strings.HasPrefix(flag, "https://") {
		return strings.TrimSuffix(flag, "/") + "/load", nil
	}
	addr := firstNonEmpty(flag, listen)
	if addr == "" {
		return "", fmt.Errorf("the admin API is off (listen.admin is empty): give --admin")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("admin address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/load", nil
}

// bearerOf picks the token the server takes for the admin API.
func bearerOf(cfg *conf.Config) string {
	if len(cfg.Auth.Users) > 0 {
		return firstNonEmpty(cfg.Auth.HTTPToken, cfg.Auth.RequirePass, cfg.Auth.Users[0].Password)
	}
	return firstNonEmpty(cfg.Auth.HTTPToken, cfg.Auth.RequirePass)
}

func clientTLS(cacert, cert, key string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cacert != "" {
		pem, err := os.ReadFile(cacert)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", cacert)
		}
	}
	if cert != "" || key != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
