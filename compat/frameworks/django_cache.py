"""Django's cache framework on django-redis (Debian's python3-django and
python3-django-redis), configured as its documentation says, doing what an
app does: get/set/add, incr/decr (EVAL), get_many/set_many (a MULTI
pipeline), ttl/touch, keys/iter_keys/delete_pattern (KEYS, SCAN), cache.lock
(redis-py's Lock: SET NX PX and EVALSHA) and clear (FLUSHDB).

Django makes a key "<KEY_PREFIX>:<version>:<name>", and django-redis's
keys()/iter_keys() take the name back as what follows the second colon. So
Django's KEY_PREFIX is the pgcache route prefix without its trailing colon
("mem" for the route "mem:"): every key is that + ":1:" + name.
"""

import threading
import time

import redis

import checks

url, prefix = checks.env()
if prefix and not prefix.endswith(":"):
    raise SystemExit(f"KEY_PREFIX {prefix!r}: Django needs a route prefix ending in ':'")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

settings.configure(
    CACHES={
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": prefix[:-1],
            "TIMEOUT": 300,
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
        }
    },
    USE_TZ=True,
)
django.setup()

from django.core.cache import cache  # noqa: E402

c = checks.Checks("django")
raw = redis.Redis.from_url(url)


def full(name):
    return f"{prefix[:-1]}:1:{name}"


@c.step("set/get")
def _():
    c.true("set", cache.set("user:1", {"name": "ada", "langs": ["en", "fr"]}, 60) is not False)
    c.eq("get", cache.get("user:1"), {"name": "ada", "langs": ["en", "fr"]})
    c.eq("get missing", cache.get("nope"), None)
    c.eq("get missing with default", cache.get("nope", "dflt"), "dflt")
    c.true("key stored under the Django prefix", raw.exists(full("user:1")) == 1,
           f"{full('user:1')!r} absent")
    cache.set("plain", 42)
    c.eq("int value", cache.get("plain"), 42)


@c.step("add")
def _():
    cache.delete("add")
    c.eq("add absent", cache.add("add", "first", 60), True)
    c.eq("add present", cache.add("add", "second", 60), False)
    c.eq("value kept", cache.get("add"), "first")


@c.step("incr/decr")
def _():
    cache.set("n", 10)
    c.eq("incr", cache.incr("n"), 11)
    c.eq("incr 5", cache.incr("n", 5), 16)
    c.eq("decr 3", cache.decr("n", 3), 13)
    c.eq("read back", cache.get("n"), 13)
    cache.delete("missing-counter")
    c.raises("incr of a missing key", ValueError, lambda: cache.incr("missing-counter"))


@c.step("incr under concurrency")
def _():
    cache.set("hits", 0, None)
    errors = []

    def work():
        try:
            for _ in range(25):
                cache.incr("hits")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.eq("errors", [f"{type(e).__name__}: {e}" for e in errors[:3]], [])
    c.eq("8 threads x 25 incr", cache.get("hits"), 200)


@c.step("set_many/get_many")
def _():
    # django-redis answers None where Django's base class lists failed keys.
    failed = cache.set_many({"m1": 1, "m2": "two", "m3": [3]}, 60)
    c.true("set_many failed keys", not failed, f"got {failed!r}")
    c.eq("get_many", cache.get_many(["m1", "m2", "m3", "m-absent"]),
         {"m1": 1, "m2": "two", "m3": [3]})
    c.true("set_many ttl", 0 < raw.ttl(full("m2")) <= 60, f"ttl {raw.ttl(full('m2'))}")
    cache.delete_many(["m1", "m2"])
    c.eq("after delete_many", cache.get_many(["m1", "m2", "m3"]), {"m3": [3]})


@c.step("ttl/touch")
def _():
    cache.set("t30", 1, 30)
    ttl = cache.ttl("t30")
    c.true("ttl of a 30s key", ttl is not None and 0 < ttl <= 30, f"ttl {ttl!r}")
    cache.set("forever", 1, None)
    c.eq("ttl of a key without expiry", cache.ttl("forever"), None)
    c.eq("ttl of a missing key", cache.ttl("nope"), 0)
    cache.set("touched", 1, 5)
    c.eq("touch", cache.touch("touched", 600), True)
    ttl = cache.ttl("touched")
    c.true("touch extends the ttl", ttl is not None and 590 <= ttl <= 600, f"ttl {ttl!r}")
    c.eq("touch missing", cache.touch("nope", 60), False)


@c.step("timeout honoured")
def _():
    cache.set("short", "v", 1)
    cache.add("short-add", "v", 1)
    c.eq("readable before expiry", cache.get("short"), "v")
    time.sleep(1.5)
    c.eq("gone after expiry", cache.get("short"), None)
    c.eq("add key gone after expiry", cache.get("short-add"), None)
    c.eq("raw key gone after expiry", raw.exists(full("short")), 0)


@c.step("keys/iter_keys/delete_pattern")
def _():
    for k in ("pat:1", "pat:2", "pat:3"):
        cache.set(k, k, 60)
    cache.set("other:1", "o", 60)
    # A key of the same route beside the Django keys, which its patterns must not reach.
    raw.set(prefix + "outsider:pat:1", "x")
    c.eq("keys", sorted(cache.keys("pat:*")), ["pat:1", "pat:2", "pat:3"])
    c.eq("iter_keys", sorted(cache.iter_keys("pat:*")), ["pat:1", "pat:2", "pat:3"])
    c.eq("delete_pattern", cache.delete_pattern("pat:*"), 3)
    c.eq("deleted", cache.get_many(["pat:1", "pat:2", "pat:3"]), {})
    c.eq("other key kept", cache.get("other:1"), "o")
    c.eq("outsider kept", raw.get(prefix + "outsider:pat:1"), b"x")
    c.eq("keys after delete", cache.keys("pat:*"), [])


@c.step("lock")
def _():
    cache.delete("lk")
    first = cache.lock("lk", timeout=5)
    c.eq("first acquires", first.acquire(blocking=False), True)
    second = cache.lock("lk", timeout=5)
    c.eq("second refused", second.acquire(blocking=False), False)
    c.eq("second refused after waiting", second.acquire(blocking_timeout=0.2), False)
    first.release()
    c.eq("second acquires after release", second.acquire(blocking=False), True)
    second.release()
    with cache.lock("lk", timeout=5):
        c.eq("held in a with block", cache.lock("lk").acquire(blocking=False), False)
    c.eq("free after the with block", raw.exists(full("lk")), 0)


@c.step("delete")
def _():
    cache.set("del", 1)
    c.eq("delete present", cache.delete("del"), True)
    c.eq("gone", cache.get("del"), None)
    c.eq("delete absent", cache.delete("del"), False)


@c.step("clear")
def _():
    cache.set("c1", 1)
    cache.set("c2", 2)
    cache.clear()
    c.eq("cleared", cache.get_many(["c1", "c2", "other:1", "user:1"]), {})
    c.eq("keys after clear", cache.keys("*"), [])


c.done()
