#!/bin/sh
# `make install`: the binary, the systemd unit, the pgcache user and an
# example config. PREFIX (/usr/local), SYSCONFDIR (/etc), UNITDIR
# ($PREFIX/lib/systemd/system) and DESTDIR (a staging root) as usual; with
# DESTDIR only files are written.
#
#   systemd/install.sh bin/pgcache
set -eu
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
PREFIX=${PREFIX:-/usr/local}
SYSCONFDIR=${SYSCONFDIR:-/etc}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
SYSUSERSDIR=${SYSUSERSDIR:-$PREFIX/lib/sysusers.d}
DESTDIR=${DESTDIR:-}

if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
	echo "make install writes to $PREFIX and $SYSCONFDIR: run it as root (sudo make install), or set DESTDIR" >&2
	exit 1
fi

cfgdir=$SYSCONFDIR/pgcache
install -d "$DESTDIR$PREFIX/bin" "$DESTDIR$UNITDIR" "$DESTDIR$SYSUSERSDIR"
install -d -m 0750 "$DESTDIR$cfgdir"
install -m 0755 "$bin" "$DESTDIR$PREFIX/bin/pgcache"
sed -e "s|/usr/local/bin/pgcache|$PREFIX/bin/pgcache|" -e "s|/etc/pgcache/|$cfgdir/|g" \
	"$here/pgcache.service" >"$DESTDIR$UNITDIR/pgcache.service"
chmod 0644 "$DESTDIR$UNITDIR/pgcache.service"
install -m 0644 "$here/pgcache.sysusers" "$DESTDIR$SYSUSERSDIR/pgcache.conf"
echo "installed $PREFIX/bin/pgcache, $UNITDIR/pgcache.service, $SYSUSERSDIR/pgcache.conf"
if [ -e "$DESTDIR$cfgdir/pgcache.yaml" ]; then
	echo "kept $cfgdir/pgcache.yaml (it exists)"
else
	install -m 0640 "$here/../conf/pgcache.example.yaml" "$DESTDIR$cfgdir/pgcache.yaml"
	echo "installed $cfgdir/pgcache.yaml (the example: point its dsn and addrs at your PostgreSQL and Valkey, or remove those backends and routes)"
fi

if [ -n "$DESTDIR" ]; then
	echo "DESTDIR=$DESTDIR: files only; on the target, create the user (systemd-sysusers) and run systemctl daemon-reload"
	exit 0
fi

# The service runs as pgcache: it reads its config and keys as group pgcache.
if command -v systemd-sysusers >/dev/null; then
	systemd-sysusers "$SYSUSERSDIR/pgcache.conf"
elif ! getent passwd pgcache >/dev/null; then
	useradd --system --user-group --no-create-home --home-dir / --shell /usr/sbin/nologin pgcache
fi
chgrp pgcache "$cfgdir" "$cfgdir/pgcache.yaml"

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	echo "next: systemctl enable --now pgcache; systemctl reload pgcache after editing $cfgdir/pgcache.yaml"
else
	echo "systemd is not running on this host (no /run/systemd/system): the unit is installed but nothing was started"
fi
