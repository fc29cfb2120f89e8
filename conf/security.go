package conf

import (
	"fmt"
	"net"
	"strings"
)

// Auth makes clients prove who they are. RESP clients authenticate as
// Redis's do (AUTH, HELLO … AUTH); HTTP clients send
// `Authorization: Bearer <token>`, where the token is HTTPToken or any
// user's password. With every field empty, auth is off.
type Auth struct {
	// RequirePass is the password of the user "default" (Redis's
	// requirepass): `AUTH <pass>` or `AUTH default <pass>`. Default "": with
	// users configured, the default user is then disabled.
	RequirePass string `koanf:"requirepass" json:"requirepass,omitempty"`
	// Users are named users: `AUTH <name> <pass>`. Default none.
	Users []User `koanf:"users" json:"users,omitempty"`
	// HTTPToken is a bearer token the HTTP data and admin APIs take besides
	// the passwords, for a client that should not hold a RESP password.
	// Default "".
	HTTPToken string `koanf:"http_token" json:"http_token,omitempty"`
}

// User is one entry of auth.users.
type User struct {
	// Name is what AUTH names. Required.
	Name string `koanf:"name" json:"name"`
	// Password is the user's password. Required.
	Password string `koanf:"password" json:"password"`
}

// RESPAuth reports whether RESP clients must AUTH before anything else.
func (a *Auth) RESPAuth() bool { return a.RequirePass != "" || len(a.Users) > 0 }

// HTTPAuth reports whether HTTP requests need a bearer token.
func (a *Auth) HTTPAuth() bool { return a.RESPAuth() || a.HTTPToken != "" }

// TLS serves fronts over TLS with one certificate. The files are read when
// the config is loaded and again on every reload, so a renewed certificate
// is picked up by `pgcache reload` or SIGHUP with the same paths.
type TLS struct {
	// CertFile is the server's certificate chain, PEM. Required with KeyFile.
	CertFile string `koanf:"cert_file" json:"cert_file,omitempty"`
	// KeyFile is the certificate's private key, PEM.
	KeyFile string `koanf:"key_file" json:"key_file,omitempty"`
	// ClientCAFile, when set, makes every client present a certificate
	// signed by one of its CAs (PEM). Default "": no client certificates.
	ClientCAFile string `koanf:"client_ca_file" json:"client_ca_file,omitempty"`
	// Fronts are the listeners served over TLS: resp, http, admin.
	// Default [resp, http] when cert_file is set. listen.resp_unix is never
	// TLS: its file mode guards it.
	Fronts []string `koanf:"fronts" json:"fronts,omitempty"`
}

// TLS fronts.
const (
	FrontRESP  = "resp"
	FrontHTTP  = "http"
	FrontAdmin = "admin"
)

// On reports whether a certificate is configured.
func (t *TLS) On() bool { return t.CertFile != "" }

// Serves reports whether front is served over TLS.
func (t *TLS) Serves(front string) bool {
	return t.On() && oneOf(front, t.Fronts...)
}

// fill sets the default fronts.
func (t *TLS) fill() {
	if t.On() && len(t.Fronts) == 0 {
		t.Fronts = []string{FrontRESP, FrontHTTP}
	}
}

func (c *Config) validateSecurity(errs *Errors) {
	a := &c.Auth
	names := map[string]int{}
	for i, u := range a.Users {
		field := fmt.Sprintf("auth.users[%d]", i)
		switch {
		case u.Name == "":
			errs.add(field+".name", "missing")
		case !printable(u.Name):
			errs.add(field+".name", "%q may hold only printable characters without spaces", u.Name)
		case u.Name == "default" && a.RequirePass != "":
			errs.add(field+".name", "%q is the user auth.requirepass sets: set one or the other", u.Name)
		default:
			if j, dup := names[u.Name]; dup {
				errs.add(field+".name", "%q is already the name of auth.users[%d]", u.Name, j)
			}
			names[u.Name] = i
		}
		if u.Password == "" {
			errs.add(field+".password", "missing")
		}
	}

	t := &c.TLS
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		errs.add("tls.key_file", "missing: tls.cert_file %q needs its key", t.CertFile)
	case t.CertFile == "" && t.KeyFile != "":
		errs.add("tls.cert_file", "missing: tls.key_file %q needs its certificate", t.KeyFile)
	}
	if !t.On() && (t.ClientCAFile != "" || len(t.Fronts) > 0) {
		errs.add("tls", "client_ca_file and fronts need tls.cert_file and tls.key_file")
	}
	for i, f := range t.Fronts {
		if !oneOf(f, FrontRESP, FrontHTTP, FrontAdmin) {
			errs.add(fmt.Sprintf("tls.fronts[%d]", i), "%q is not one of resp, http, admin", f)
		}
	}

	// A cache is read and written by whoever reaches it: beyond loopback
	// that must be someone who knows a password, unless the operator says
	// the network is theirs.
	if c.Insecure {
		return
	}
	for _, l := range []struct {
		field, addr, want string
		authed            bool
	}{
		{"listen.resp", c.Listen.RESP, "auth.requirepass or auth.users", a.RESPAuth()},
		{"listen.http", c.Listen.HTTP, "auth.requirepass, auth.users or auth.http_token", a.HTTPAuth()},
		{"listen.admin", c.Listen.Admin, "auth.requirepass, auth.users or auth.http_token", a.HTTPAuth()},
	} {
		if l.addr != "" && !l.authed && !loopback(l.addr) {
			errs.add(l.field, "%q is not a loopback address and auth is off: set %s, or insecure: true", l.addr, l.want)
		}
	}
}

// loopback reports whether addr only accepts connections from this host.
// A name other than localhost counts as not: validation does no DNS.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // reported as not host:port already
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// printable is Redis's rule for names: printable ASCII, no spaces.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}
