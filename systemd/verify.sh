#!/bin/sh
# Checks every file under systemd/ with the tools that read them, without
# installing anything: `make verify-units` (part of `make test`).
#
#   systemd/verify.sh bin/pgcache
#
# systemd-analyze verify wants ExecStart's binary to exist, so the unit is
# verified as a copy that runs the binary just built. Drop-ins are verified
# on a stand-in unit, since PostgreSQL and Valkey need not be installed.
set -eu
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v systemd-analyze >/dev/null || { echo "systemd-analyze is missing: apt-get install systemd" >&2; exit 1; }

sed "s|^ExecStart=/usr/local/bin/pgcache |ExecStart=$bin |" "$here/pgcache.service" >"$tmp/pgcache.service"
printf '[Unit]\nDescription=stand-in for PostgreSQL and Valkey\n[Service]\nExecStart=/bin/true\n' >"$tmp/quota-check.service"
mkdir "$tmp/quota-check.service.d"
cp "$here/dropins/quota.conf" "$tmp/quota-check.service.d/pgcache-quota.conf"
# --man=no: Documentation= is a URL, and man pages need not be installed.
systemd-analyze verify --man=no "$tmp/pgcache.service" "$tmp/quota-check.service"
echo "systemd-analyze verify: pgcache.service, dropins/quota.conf OK"

# docs/deployment.md quotes this score; fail if a change makes it worse than 1.5.
systemd-analyze security --offline=yes --threshold=15 "$tmp/pgcache.service" | tail -n 1

mkdir -p "$tmp/root/etc"
out=$(systemd-sysusers --root="$tmp/root" "$here/pgcache.sysusers" 2>&1) || { echo "$out" >&2; exit 1; }
grep -q '^pgcache:' "$tmp/root/etc/passwd" || { echo "pgcache.sysusers made no pgcache user" >&2; exit 1; }
echo "systemd-sysusers: pgcache.sysusers OK"

# Every key of the sysctl file names a setting this kernel has.
grep -Ev '^[[:space:]]*(#|$)' "$here/99-pgcache.conf" | while IFS='= ' read -r key _; do
	[ -e "/proc/sys/$(echo "$key" | tr . /)" ] || { echo "99-pgcache.conf: unknown sysctl $key" >&2; exit 1; }
done
echo "sysctl: 99-pgcache.conf names known settings"
