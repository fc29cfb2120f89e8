#!/bin/sh
# install.sh: the framework libraries the programs of compat/frameworks
# drive, from Debian's packages and the npm registry, never vendored here.
# Idempotent: what is installed already is left as it is.
#
#   Python (Debian's /usr/bin/python3): Django + django-redis, Flask +
#   Flask-Caching + cachelib, redis-py, Celery + kombu (its Redis broker),
#   channels_redis (Django Channels' layers; it brings hiredis, which
#   redis-py then parses replies with).
#   Ruby: ActiveSupport (RedisCacheStore) + redis-rb + connection_pool.
#   Node (the machine's node, 20 here): node/package-lock.json (besides the
#   cache stores: ioredis + ratelimiter, redis-sessions, socket.io with
#   socket.io-client and @socket.io/redis-adapter), installed
#   with `npm ci` into $PGCACHE_COMPAT_NODE_DIR (default
#   /var/cache/pgcache-test/node), outside the repository; the tests put its
#   node_modules on NODE_PATH.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
node_dir=${PGCACHE_COMPAT_NODE_DIR:-/var/cache/pgcache-test/node}

apt_packages="python3 python3-django python3-django-redis python3-redis python3-flask
python3-flask-caching python3-cachelib python3-celery python3-kombu python3-channels-redis
ruby ruby-activesupport ruby-redis ruby-connection-pool"

sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi

missing=""
for p in $apt_packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# Node.js and npm: the machine's own (NodeSource's nodejs carries npm), or
# Debian's when there is none.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
	echo "installing:$missing"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

# npm ci again only when the lock file changed since the last install.
stamp="$node_dir/.package-lock.sha256"
want=$(sha256sum "$here/node/package-lock.json" | cut -d' ' -f1)
if [ -d "$node_dir/node_modules" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	exit 0
fi
echo "installing the Node libraries of compat/frameworks into $node_dir"
$sudo mkdir -p "$node_dir"
$sudo cp "$here/node/package.json" "$here/node/package-lock.json" "$node_dir/"
(cd "$node_dir" && $sudo npm ci --engine-strict --no-audit --no-fund --loglevel=error)
echo "$want" | $sudo tee "$stamp" >/dev/null
