package server

import "runtime/debug"

// version is set at build time: -ldflags "-X github.com/pgcache/pgcache/server.version=v0.1.0".
var version = ""

// Version is pgcache's version: the one set at build time, else the module
// version or VCS revision Go recorded, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev == "":
		return "dev"
	case dirty:
		return "dev-" + rev + "-dirty"
	}
	return "dev-" + rev
}
