"""redis-py (Debian's python3-redis) as apps use it directly: pipelines
(transaction on, the default: MULTI/EXEC), transaction() with WATCH, a
registered script (EVALSHA falling back to EVAL), and Lock: acquire, a
second holder refused, extend, reacquire, release, expiry.

Every key is KEY_PREFIX + "py:" + name.
"""

import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError, WatchError

import checks

url, prefix = checks.env()
r = redis.Redis.from_url(url)
other = redis.Redis.from_url(url)  # another client, as another app instance
c = checks.Checks("redis-py")


def k(name):
    return prefix + "py:" + name


@c.step("pipeline (transaction)")
def _():
    r.delete(k("p"))
    p = r.pipeline()
    p.set(k("p"), 1).incr(k("p")).incrby(k("p"), 5).get(k("p")).expire(k("p"), 60)
    c.eq("replies", p.execute(), [True, 2, 7, b"7", True])
    c.true("ttl set in the transaction", 0 < r.ttl(k("p")) <= 60, f"ttl {r.ttl(k('p'))}")
    with r.pipeline() as p:
        p.mset({k("a"): "1", k("b"): "2"}).mget(k("a"), k("b"))
        c.eq("mset/mget in a transaction", p.execute(), [True, [b"1", b"2"]])


@c.step("pipeline error inside the transaction")
def _():
    # Redis runs every queued command; the one that fails gets its error in
    # EXEC's reply and redis-py raises it, while the others took effect.
    r.set(k("str"), "abc")
    r.delete(k("cnt"))
    p = r.pipeline()
    p.incr(k("cnt")).incr(k("str")).incr(k("cnt"))
    c.raises("execute raises the command's error", redis.ResponseError, p.execute)
    c.eq("the other commands ran once each", r.get(k("cnt")), b"2")
    p = r.pipeline()
    p.incr(k("cnt")).incr(k("str")).incr(k("cnt"))
    res = p.execute(raise_on_error=False)
    c.eq("replies without raising", (res[0], type(res[1]).__name__, res[2]), (3, "ResponseError", 4))


@c.step("pipeline without transaction")
def _():
    p = r.pipeline(transaction=False)
    p.set(k("nt"), "x").append(k("nt"), "y").get(k("nt"))
    c.eq("replies", p.execute(), [True, 2, b"xy"])


@c.step("pipelines under concurrency")
def _():
    r.set(k("hits"), 0)
    errors = []

    def work():
        try:
            for _ in range(25):
                p = r.pipeline()
                p.incr(k("hits")).get(k("hits"))
                p.execute()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.eq("errors", [f"{type(e).__name__}: {e}" for e in errors[:3]], [])
    c.eq("8 threads x 25 transactions", r.get(k("hits")), b"200")


@c.step("WATCH")
def _():
    r.set(k("w"), "old")
    with r.pipeline() as p:
        p.watch(k("w"))
        c.eq("read while watching", p.get(k("w")), b"old")
        other.set(k("w"), "changed")  # by another client
        p.multi()
        p.set(k("w"), "mine")
        c.raises("EXEC aborted by another client's write", WatchError, p.execute)
    c.eq("the other client's value kept", r.get(k("w")), b"changed")
    with r.pipeline() as p:
        p.watch(k("w"))
        p.multi()
        p.set(k("w"), "mine")
        c.eq("EXEC without a change in between", p.execute(), [True])
    c.eq("written", r.get(k("w")), b"mine")

    r.set(k("balance"), 10)

    def spend(pipe):
        bal = int(pipe.get(k("balance")))
        pipe.multi()
        pipe.set(k("balance"), bal - 3)

    c.eq("transaction()", r.transaction(spend, k("balance")), [True])
    c.eq("transaction() result", r.get(k("balance")), b"7")


@c.step("register_script")
def _():
    add = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    r.delete(k("s"))
    c.eq("first call", add(keys=[k("s")], args=[5]), 5)
    r.script_flush()  # EVALSHA now misses: redis-py loads the script again
    c.eq("after SCRIPT FLUSH", add(keys=[k("s")], args=[2]), 7)
    p = r.pipeline()
    add(keys=[k("s")], args=[1], client=p)
    c.eq("in a pipeline", p.execute(), [8])


@c.step("lock")
def _():
    r.delete(k("lock"))
    first = r.lock(k("lock"), timeout=5)
    second = r.lock(k("lock"), timeout=5)
    c.eq("first acquires", first.acquire(blocking=False), True)
    c.eq("owned", first.owned(), True)
    c.eq("locked", second.locked(), True)
    c.eq("second refused", second.acquire(blocking=False), False)
    c.eq("second refused after waiting", second.acquire(blocking_timeout=0.2), False)
    c.eq("not owned by the second", second.owned(), False)

    c.eq("extend", first.extend(10), True)
    pttl = r.pttl(k("lock"))
    c.true("extend adds to the ttl", 10000 < pttl <= 15000, f"pttl {pttl}")
    c.eq("reacquire", first.reacquire(), True)
    pttl = r.pttl(k("lock"))
    c.true("reacquire resets the ttl", 4000 < pttl <= 5000, f"pttl {pttl}")
    c.raises("the second cannot release it", LockError, second.release)
    c.raises("the second cannot extend it", LockError, lambda: second.extend(5))

    token = first.local.token
    first.release()
    c.eq("released", r.exists(k("lock")), 0)
    c.eq("second acquires after release", second.acquire(blocking=False), True)
    c.raises("the former holder's token releases nothing", LockNotOwnedError,
             lambda: first.do_release(token))
    c.eq("still held by the second", second.owned(), True)
    second.release()


@c.step("lock expiry")
def _():
    short = r.lock(k("lock-exp"), timeout=0.3)
    c.eq("acquire", short.acquire(blocking=False), True)
    time.sleep(0.5)
    nxt = r.lock(k("lock-exp"), timeout=5)
    c.eq("taken by another after the timeout", nxt.acquire(blocking=False), True)
    c.raises("the expired holder cannot extend", LockNotOwnedError, lambda: short.extend(1))
    c.raises("the expired holder cannot release", LockNotOwnedError, short.release)
    c.eq("the new holder keeps it", nxt.owned(), True)
    nxt.release()


c.done()
