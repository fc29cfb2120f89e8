// Package certs serves TLS with a certificate that can be replaced while
// listeners stay open: a reload reads the files again and stores the
// result, and every handshake after that uses it. Connections already
// established keep the certificate they were made with.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Files name the PEM files of one server certificate.
type Files struct {
	CertFile, KeyFile string
	// ClientCAFile, when not "", makes clients present a certificate that
	// one of its CAs signed.
	ClientCAFile string
}

// Load reads the files and returns the TLS config they describe. Errors
// name the file.
func Load(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: cert_file %q, key_file %q: %w", f.CertFile, f.KeyFile, err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	if f.ClientCAFile != "" {
		pool, err := Pool(f.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client_ca_file: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Pool reads a PEM bundle of CA certificates. Errors name the file.
func Pool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%q: no PEM certificate in it", file)
	}
	return pool, nil
}

// Reloadable is a TLS config whose content Store replaces.
type Reloadable struct {
	cur atomic.Pointer[tls.Config]
}

// NewReloadable returns a Reloadable serving cfg.
func NewReloadable(cfg *tls.Config) *Reloadable {
	r := &Reloadable{}
	r.cur.Store(cfg)
	return r
}

// Store makes cfg the config of every handshake from now on.
func (r *Reloadable) Store(cfg *tls.Config) { r.cur.Store(cfg) }

// Config is the config to listen with: it hands each handshake the config
// stored last, certificate and client CAs together.
func (r *Reloadable) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := r.cur.Load()
			if cfg == nil {
				return nil, errNoCert
			}
			return cfg, nil
		},
	}
}

var errNoCert = errors.New("tls: no certificate loaded")
