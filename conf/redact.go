package conf

import (
	"encoding/json"
	"net/url"
	"strings"
)

// Redacted is the config as JSON with every secret replaced by "REDACTED":
// passwords, tokens, and the password inside a DSN URL.
func (c *Config) Redacted() ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	return json.MarshalIndent(redact(tree, ""), "", "  ")
}

const redacted = "REDACTED"

func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "pass", "secret", "token", "requirepass"} {
		if k == s || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return false
}

func redact(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			t[k] = redact(child, k)
		}
		return t
	case []any:
		for i, child := range t {
			t[i] = redact(child, key)
		}
		return t
	case string:
		if secretKey(key) && t != "" {
			return redacted
		}
		if strings.EqualFold(key, "dsn") {
			return redactDSN(t)
		}
	}
	return v
}

// redactDSN hides the password of a URL DSN, and of a key=value DSN.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			fields[i] = "password=" + redacted
		}
	}
	return strings.Join(fields, " ")
}
