// Package auth checks the credentials of pgcache's clients: RESP users and
// passwords (Redis's AUTH) and HTTP bearer tokens. A nil *Users is auth off.
//
// Secrets are kept only as SHA-256 digests and compared in constant time:
// hashing first makes every comparison the same length, so neither a
// password's bytes nor its length leak through timing.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
)

// DefaultUser is the user `AUTH <password>` authenticates as.
const DefaultUser = "default"

// Users are the configured credentials. It is immutable: a reload builds a
// new one.
type Users struct {
	users  map[string][sha256.Size]byte // name -> digest of the password
	tokens [][sha256.Size]byte          // bearer tokens: every password, and the HTTP token
}

// New returns the credentials, or nil when there are none. requirepass is
// the default user's password ("" leaves that user disabled once users are
// configured); users maps names to passwords; httpToken is one more bearer
// token for HTTP.
func New(requirepass string, users map[string]string, httpToken string) *Users {
	if requirepass == "" && len(users) == 0 && httpToken == "" {
		return nil
	}
	u := &Users{users: make(map[string][sha256.Size]byte, len(users)+1)}
	add := func(name, pass string) {
		d := sha256.Sum256([]byte(pass))
		u.users[name] = d
		u.tokens = append(u.tokens, d)
	}
	if requirepass != "" {
		add(DefaultUser, requirepass)
	}
	for name, pass := range users {
		add(name, pass)
	}
	if httpToken != "" {
		u.tokens = append(u.tokens, sha256.Sum256([]byte(httpToken)))
	}
	return u
}

// RESP reports whether RESP clients must authenticate: a password is set
// for some user. An HTTP token alone leaves RESP open.
func (u *Users) RESP() bool { return u != nil && len(u.users) > 0 }

// HTTP reports whether HTTP requests must carry a bearer token.
func (u *Users) HTTP() bool { return u != nil }

// Check reports whether pass is user's password. An unknown user costs the
// same comparison as a known one.
func (u *Users) Check(user, pass []byte) bool {
	if u == nil {
		return false
	}
	want, known := u.users[string(user)]
	got := sha256.Sum256(pass)
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && known
}

// Bearer reports whether token is one the HTTP APIs take. Every token is
// compared, so the time taken does not tell which one came close.
func (u *Users) Bearer(token []byte) bool {
	if u == nil {
		return false
	}
	got := sha256.Sum256(token)
	ok := 0
	for _, t := range u.tokens {
		ok |= subtle.ConstantTimeCompare(got[:], t[:])
	}
	return ok == 1
}

// Has reports whether name is a configured user (CLIENT KILL USER).
func (u *Users) Has(name string) bool {
	if u == nil {
		return false
	}
	_, ok := u.users[name]
	return ok
}
