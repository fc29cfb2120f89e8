// Package certstest makes a throwaway CA, a server certificate for
// 127.0.0.1 and localhost, and a client certificate, written as PEM files
// for tests that run real TLS clients (redis-cli --tls, curl --cacert).
package certstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files Generate wrote.
type Files struct {
	CA                    string // the CA certificate: clients verify the server with it, the server clients
	ServerCert, ServerKey string // for 127.0.0.1, ::1 and localhost
	ClientCert, ClientKey string // CN "client"
	Serial                int64  // the server certificate's serial number
	Authority             *CA    // issues more (a renewed server certificate)
}

// CA is a certificate authority that signs certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pgcache test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Generate writes a new CA with a server and a client certificate into dir.
func Generate(t testing.TB, dir string) Files {
	t.Helper()
	ca := NewCA(t)
	f := Files{CA: filepath.Join(dir, "ca.pem"), Authority: ca}
	write(t, f.CA, ca.pem)
	f.ServerCert, f.ServerKey = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	f.Serial = 100
	ca.Issue(t, f.ServerCert, f.ServerKey, "pgcache", f.Serial, false)
	f.ClientCert, f.ClientKey = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	ca.Issue(t, f.ClientCert, f.ClientKey, "client", 200, true)
	return f
}

// Issue writes a certificate signed by ca (for 127.0.0.1, ::1 and
// localhost, or a client certificate) and its key, replacing the files.
func (ca *CA) Issue(t testing.TB, certFile, keyFile, cn string, serial int64, client bool) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames, tmpl.IPAddresses = nil, nil
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
