#!/bin/sh
# `make tune-os`: the kernel network settings of 99-pgcache.conf and the
# CPU and memory caps of dropins/quota.conf on PostgreSQL and Valkey/Redis,
# as the published comparison runs its benchmark. It prints what it will change, then
# changes it. DRY_RUN=1 only prints; DESTDIR only writes files there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
DESTDIR=${DESTDIR:-}
DRY_RUN=${DRY_RUN:-}
sysctl_file=/etc/sysctl.d/99-pgcache.conf
dropin=pgcache-quota.conf
units="postgresql@.service postgresql.service valkey-server.service valkey.service redis-server.service redis.service"
booted=
[ -d /run/systemd/system ] && booted=1

settings() { grep -Ev '^[[:space:]]*(#|$)' "$here/99-pgcache.conf" | sed 's/[[:space:]]*=[[:space:]]*/=/'; }

# The units to cap: those this host has, or (without systemd to ask) all
# of them, since a drop-in for a unit that does not exist does nothing.
capped=
for u in $units; do
	if [ -z "$booted" ] || [ -n "$DESTDIR" ] || systemctl list-unit-files --no-legend "$u" 2>/dev/null | grep -q .; then
		capped="$capped $u"
	fi
done

echo "make tune-os will:"
echo "  1. install $DESTDIR$sysctl_file and apply it:"
settings | while IFS='=' read -r key value; do
	if now=$(sysctl -n "$key" 2>/dev/null); then
		now=$(echo "$now" | tr -s '\t ' ' ')
	else
		now="(unknown here)"
	fi
	printf '       %-34s %-20s -> %s\n' "$key" "${now:-(empty)}" "$value"
done
echo "  2. cap$capped at CPUQuota=200% MemoryMax=4G, with drop-ins:"
for u in $capped; do
	echo "       $DESTDIR/etc/systemd/system/$u.d/$dropin"
done
[ -z "$capped" ] && echo "       (none of $units is installed)"
if [ -z "$booted" ] && [ -z "$DESTDIR" ]; then
	echo "     systemd is not running on this host (no /run/systemd/system): the drop-ins are written,"
	echo "     but no cap applies until systemd runs these services"
fi

if [ -n "$DRY_RUN" ]; then
	echo "DRY_RUN: nothing changed"
	exit 0
fi
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
	echo "make tune-os changes kernel settings and system units: run it as root (sudo make tune-os)" >&2
	exit 1
fi

install -D -m 0644 "$here/99-pgcache.conf" "$DESTDIR$sysctl_file"
for u in $capped; do
	install -D -m 0644 "$here/dropins/quota.conf" "$DESTDIR/etc/systemd/system/$u.d/$dropin"
done
if [ -n "$DESTDIR" ]; then
	echo "DESTDIR=$DESTDIR: files written, nothing applied"
	exit 0
fi

if sysctl -p "$sysctl_file" >/dev/null; then
	echo "applied $sysctl_file"
else
	echo "warning: some settings of $sysctl_file could not be applied (in a container the host owns them); the file is in place for the next boot" >&2
fi
if [ -z "$booted" ]; then
	echo "drop-ins written; systemd is not running, so no service was capped now"
	exit 0
fi
systemctl daemon-reload
# set-property --runtime caps what runs now; the drop-ins keep it across restarts.
for u in $capped; do
	case $u in
	*@.service) running=$(systemctl list-units --no-legend --plain --state=active "${u%.service}*.service" | awk '{print $1}') ;;
	*) running=$(systemctl is-active --quiet "$u" && echo "$u" || true) ;;
	esac
	for r in $running; do
		systemctl set-property --runtime "$r" CPUQuota=200% MemoryMax=4G
		echo "capped $r now"
	done
done
echo "done"
