"""Flask-Caching's RedisCache (Debian's python3-flask-caching over
python3-cachelib) in a real Flask app, configured as its documentation says
with CACHE_KEY_PREFIX: get/set/add, get_many/set_many, inc/dec, has,
delete_many, a @cached view and a @memoize function served through Flask's
test client, timeouts, and clear(), which with a key prefix deletes what
KEYS <prefix>* finds and must leave every other key alone.

Every key is KEY_PREFIX + "flask:" + name.
"""

import time

import redis
from flask import Flask
from flask_caching import Cache

import checks

url, prefix = checks.env()
app_prefix = prefix + "flask:"

app = Flask(__name__)
app.config.update(
    CACHE_TYPE="RedisCache",
    CACHE_REDIS_URL=url,
    CACHE_KEY_PREFIX=app_prefix,
    CACHE_DEFAULT_TIMEOUT=60,
)
cache = Cache(app)
raw = redis.Redis.from_url(url)
c = checks.Checks("flask")

calls = {"view": 0, "memo": 0}


@app.route("/report")
@cache.cached(timeout=60)
def report():
    calls["view"] += 1
    return f"report #{calls['view']}"


@cache.memoize(timeout=60)
def price(item, qty):
    calls["memo"] += 1
    return {"item": item, "total": qty * 3}


@c.step("set/get")
def _():
    with app.app_context():
        c.eq("set", cache.set("user:1", {"name": "ada"}), True)
        c.eq("get", cache.get("user:1"), {"name": "ada"})
        c.eq("get missing", cache.get("nope"), None)
        c.eq("stored under the prefix", raw.exists(app_prefix + "user:1"), 1)
        c.true("default timeout", 0 < raw.ttl(app_prefix + "user:1") <= 60,
               f"ttl {raw.ttl(app_prefix + 'user:1')}")
        c.eq("has", cache.has("user:1"), True)
        c.eq("has missing", cache.has("nope"), False)


@c.step("add")
def _():
    with app.app_context():
        cache.delete("add")
        c.eq("add absent", cache.add("add", 1), True)
        c.eq("add present", cache.add("add", 2), False)
        c.eq("value kept", cache.get("add"), 1)


@c.step("set_many/get_many/delete_many")
def _():
    with app.app_context():
        c.true("set_many", cache.set_many({"m1": 1, "m2": "two", "m3": [3]}, timeout=30))
        c.eq("get_many", cache.get_many("m1", "m2", "m3", "m-absent"), [1, "two", [3], None])
        c.true("set_many ttl", 0 < raw.ttl(app_prefix + "m3") <= 30,
               f"ttl {raw.ttl(app_prefix + 'm3')}")
        cache.delete_many("m1", "m2")
        c.eq("after delete_many", cache.get_many("m1", "m2", "m3"), [None, None, [3]])


@c.step("inc/dec")
def _():
    with app.app_context():
        # Flask-Caching's Cache has no inc/dec of its own: the backend does.
        # A counter starts absent: cachelib 0.9 pickles what set() stores,
        # ints too, so INCRBY refuses a counter written by set(), on Redis too.
        cache.delete("n")
        c.eq("inc of a missing key", cache.cache.inc("n"), 1)
        c.eq("inc 14", cache.cache.inc("n", 14), 15)
        c.eq("dec 5", cache.cache.dec("n", 5), 10)
        c.eq("read back", cache.get("n"), 10)


@c.step("cached view")
def _():
    client = app.test_client()
    first = client.get("/report")
    second = client.get("/report")
    c.eq("status", (first.status_code, second.status_code), (200, 200))
    c.eq("second answer from the cache", second.get_data(as_text=True), "report #1")
    c.eq("view ran once", calls["view"], 1)
    with app.app_context():
        c.true("view cached under the prefix", len(raw.keys(app_prefix + "view/*")) == 1,
               f"keys {raw.keys(app_prefix + '*')}")


@c.step("memoize")
def _():
    with app.app_context():
        c.eq("first call", price("tea", 2), {"item": "tea", "total": 6})
        c.eq("second call", price("tea", 2), {"item": "tea", "total": 6})
        c.eq("function ran once", calls["memo"], 1)
        cache.delete_memoized(price, "tea", 2)
        price("tea", 2)
        c.eq("runs again after delete_memoized", calls["memo"], 2)


@c.step("timeout honoured")
def _():
    with app.app_context():
        cache.set("short", "v", timeout=1)
        c.eq("readable before expiry", cache.get("short"), "v")
        time.sleep(1.5)
        c.eq("gone after expiry", cache.get("short"), None)
        c.eq("raw key gone", raw.exists(app_prefix + "short"), 0)


@c.step("delete")
def _():
    with app.app_context():
        cache.set("del", 1)
        c.eq("delete present", cache.delete("del"), True)
        c.eq("gone", cache.get("del"), None)


@c.step("clear keeps keys outside the prefix")
def _():
    # Keys of the same route that Flask does not own: another app's, and
    # one whose name starts like the prefix but without its colon.
    raw.set(prefix + "other-app:k", "keep")
    raw.set(prefix + "flaskish", "keep")
    with app.app_context():
        cache.set("c1", 1)
        cache.set("c2", 2)
        c.true("clear", cache.clear())
        c.eq("cleared", cache.get_many("c1", "c2", "user:1", "n"), [None, None, None, None])
        c.eq("no key left under the prefix", raw.keys(app_prefix + "*"), [])
    c.eq("other app's key kept", raw.get(prefix + "other-app:k"), b"keep")
    c.eq("look-alike key kept", raw.get(prefix + "flaskish"), b"keep")
    raw.delete(prefix + "other-app:k", prefix + "flaskish")


c.done()
