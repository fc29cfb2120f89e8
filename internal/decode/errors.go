package decode

import (
	"errors"
	"regexp"
	"strings"
)

// Errors is every problem a decode found, one per line, each as
// `path: reason` (the value, when there is one, inside the reason).
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

// cleanError rewrites mapstructure's report into Errors: it drops the
// "decoding failed due to the following error(s):" preamble, names each
// field by its path and each unknown key on a line of its own
// (`routes[0].prefx: unknown key`, not `'conf.Route' has invalid keys`),
// and says what was wanted instead of naming Go types. root is the Go name
// of the top-level type, which mapstructure uses as the path of its own
// keys.
func cleanError(err error, root string) error {
	msg := err.Error()
	if i := strings.Index(msg, "error(s):"); i >= 0 {
		msg = strings.TrimSpace(msg[i+len("error(s):"):])
	}
	var out Errors
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*"))
		if l == "" {
			continue
		}
		if m := invalidKeys.FindStringSubmatch(l); m != nil {
			path := m[1]
			if path == root || path == "" {
				path = ""
			} else {
				path += "."
			}
			for _, k := range strings.Split(m[2], ", ") {
				out = append(out, path+k+": unknown key")
			}
			continue
		}
		if m := fieldError.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+": "+plain(m[2]))
			continue
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return errors.New(msg)
	}
	return out
}

var (
	// invalidKeys matches mapstructure's "'routes[0]' has invalid keys: a, b".
	invalidKeys = regexp.MustCompile(`^'([^']*)' has invalid keys: (.*)$`)
	// fieldError matches mapstructure's "'resp.max_clients' <reason>".
	fieldError = regexp.MustCompile(`^'([^']+)' (.*)$`)
	// goKind matches the reasons that name a Go kind: "cannot parse value
	// as 'int32': strconv.ParseInt: …", "expected type 'bool', got
	// unconvertible type 'string', value: 'x'".
	cannotParse   = regexp.MustCompile(`^cannot parse value as '([a-z0-9]+)'`)
	unconvertible = regexp.MustCompile(`^expected type '([^']+)', got unconvertible type '[^']+'(?:, value: '(.*)')?$`)
)

// plain says a mapstructure reason without Go's type names.
func plain(reason string) string {
	want := ""
	value := ""
	if m := cannotParse.FindStringSubmatch(reason); m != nil {
		want = m[1]
	} else if m := unconvertible.FindStringSubmatch(reason); m != nil {
		want, value = m[1], m[2]
	} else {
		return reason
	}
	if value != "" {
		value = `"` + value + `" `
	}
	switch {
	case strings.HasPrefix(want, "int"):
		return value + "is not a whole number"
	case strings.HasPrefix(want, "uint"):
		return value + "is not a whole number of 0 or more"
	case strings.HasPrefix(want, "float"):
		return value + "is not a number"
	case want == "bool":
		return value + "is not true or false"
	case want == "string":
		return value + "is not a string"
	case strings.HasPrefix(want, "[]"):
		return value + "is not a list"
	case strings.HasPrefix(want, "map["):
		return value + "is not a map of keys"
	}
	return value + "is not the kind of value this setting takes"
}
