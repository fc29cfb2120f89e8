#!/bin/sh
# install.sh: fetch Redis's own Tcl test suite, from Debian's
# `redis` source package, into a cache directory outside the repository
# (never vendored), plus what runs it: tclsh (Debian's `tcl`), dpkg-source
# (`dpkg-dev`) and the redis-server the baseline runs (`redis-server`).
#
# Idempotent: a second run with everything in place changes nothing and
# makes no network request. Prints the suite's directory on its last line.
#
#   REDIS_SUITE_CACHE  where the source package is unpacked
#                      (default /var/cache/pgcache-test/redis-src)
#
# Adds a deb-src entry for the suites of /etc/apt/sources.list.d/debian.sources
# (a separate file, pgcache-deb-src.sources) when there is none.
set -eu

CACHE=${REDIS_SUITE_CACHE:-/var/cache/pgcache-test/redis-src}
SRCLIST=/etc/apt/sources.list.d/pgcache-deb-src.sources

if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi

suite_dir() {
	# The newest unpacked redis-<version> tree that has the test runner.
	for d in $(ls -d "$CACHE"/redis-*/ 2>/dev/null | sort -V -r); do
		if [ -f "$d/runtest" ] && [ -f "$d/tests/test_helper.tcl" ]; then
			echo "${d%/}"
			return 0
		fi
	done
	return 1
}

missing=""
command -v tclsh >/dev/null 2>&1 || missing="$missing tcl"
command -v dpkg-source >/dev/null 2>&1 || missing="$missing dpkg-dev"
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v redis-cli >/dev/null 2>&1 || missing="$missing redis-tools"
if [ -n "$missing" ]; then
	echo "installing:$missing" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
fi

if dir=$(suite_dir); then
	echo "$dir"
	exit 0
fi

# deb-src: only when no source list already offers source packages.
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
	echo "adding $SRCLIST" >&2
	$SUDO tee "$SRCLIST" >/dev/null <<'SOURCES'
# Added by pgcache's compat/redissuite/install.sh: source packages, for
# Redis's own test suite (apt-get source redis).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
	$SUDO apt-get update -qq
fi

$SUDO mkdir -p "$CACHE"
# apt-get source drops privileges to _apt for the download when it can;
# as root in a directory _apt cannot write it only warns, so run it in a
# temporary directory and move the result.
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get source -qq redis >&2) || {
	echo "apt-get source redis failed: needs a deb-src entry for bookworm ($SRCLIST) and dpkg-dev" >&2
	exit 1
}
for d in "$tmp"/redis-*/; do
	[ -d "$d" ] || continue
	name=$(basename "$d")
	$SUDO rm -rf "$CACHE/$name"
	$SUDO mv "$d" "$CACHE/$name"
done
if ! dir=$(suite_dir); then
	echo "no redis-*/runtest under $CACHE after apt-get source redis" >&2
	exit 1
fi
echo "$dir"
