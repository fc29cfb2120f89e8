"""Django Channels' Redis channel layers (Debian's python3-channels-redis
4.0 on redis-py 4.3's asyncio client), configured as channels_redis's
documentation says, two layer instances standing for two Django servers:

- RedisChannelLayer: a channel is a sorted set of messages scored by their
  send time (ZADD, ZCOUNT for its capacity, ZREMRANGEBYSCORE for what
  expired, EXPIRE), taken by BZPOPMIN into a backup sorted set that a Lua
  script (EVAL with the keys passed as arguments) puts back; a group is a
  sorted set of channel names, and group_send a Lua script that ZADDs to
  each; flush a script that deletes KEYS prefix*.
- RedisPubSubChannelLayer: a channel or group is a pub/sub channel
  (SUBSCRIBE, PUBLISH).

Asserted: messages sent to a channel are received once, in order; a
receive blocked on an empty channel is woken by a send through the other
instance; process-specific channels and groups reach the other instance,
and a discarded member no more; a full channel refuses; an expired message
is not received; flush empties the layer; the pub/sub layer carries
channel and group messages between the instances.

The layers' keys start with KEY_PREFIX + "asgi".

Against pgcache (PGCACHE=1) the channel layer's scripts are refused, as
docs/architecture.md says: a script touches only the keys it declares,
and RedisChannelLayer's cleanup and flush scripts declare none (they pass
their keys as arguments). There the steps of that layer are replaced by
one that asserts the refusal; the pub/sub layer is asserted in full.
"""

import os

import asyncio
import time

import checks

url, prefix = checks.env()

from channels.exceptions import ChannelFull  # noqa: E402
from channels_redis.core import RedisChannelLayer  # noqa: E402
from channels_redis.pubsub import RedisPubSubChannelLayer  # noqa: E402
import redis  # noqa: E402

c = checks.Checks("channels")
r = redis.Redis.from_url(url)
asgi = prefix + "asgi"
# wait bounds one expected message.
WAIT = 5
# quiet is how long a message that should not come is waited for.
QUIET = 0.5


def core(**kw):
    return RedisChannelLayer(hosts=[url], prefix=asgi, **kw)


def step(name):
    """Runs the coroutine function now as one step, bounded."""
    def run(fn):
        @c.step(name)
        def _():
            asyncio.run(asyncio.wait_for(fn(), 30))
        return fn
    return run


async def subscribed(channel, n=1):
    """Waits until the server has n subscriptions to channel: redis-py's
    subscribe sends SUBSCRIBE without waiting for its confirmation, so a
    send right after new_channel or group_add may reach the server, on the
    other connection, before the SUBSCRIBE does, and be lost (on Redis too;
    a loaded machine widens the window)."""
    for _ in range(100):
        (_, have), = r.pubsub_numsub(channel)
        if have >= n:
            return
        await asyncio.sleep(0.05)
    c.true("subscribed", False, f"{channel}: {have} subscribers after 5 s, want {n}")


async def nothing(layer, channel):
    """Whether no message comes on channel within QUIET."""
    try:
        m = await asyncio.wait_for(layer.receive(channel), QUIET)
    except asyncio.TimeoutError:
        return True
    print(f"  unexpected message on {channel}: {m}", flush=True)
    return False


@c.step("start clean")
def _():
    for k in r.scan_iter(asgi + "*"):
        r.delete(k)


PGCACHE = os.environ.get("PGCACHE") == "1"


def core_step(name):
    """A step of RedisChannelLayer: not run against pgcache (see above)."""
    if PGCACHE:
        return lambda fn: fn
    return step(name)


if PGCACHE:
    @step("the channel layer's undeclared-key script is refused")
    async def _():
        a = core()
        try:
            await a.send("compat.refused", {"type": "x"})
            try:
                await asyncio.wait_for(a.receive("compat.refused"), WAIT)
                c.true("refused", False, "the receive's cleanup script ran")
            except redis.exceptions.ResponseError as e:
                c.true("refused", "did not declare" in str(e), str(e))
        finally:
            await a.close_pools()
        for k in r.scan_iter(asgi + "*"):
            r.delete(k)


@core_step("channel messages in order, once")
async def _():
    a, b = core(), core()
    try:
        for i in range(20):
            await a.send("compat.orders", {"type": "order", "n": i})
        c.eq("one sorted set", r.type(asgi + "compat.orders"), b"zset")
        c.eq("its messages", r.zcard(asgi + "compat.orders"), 20)
        got = [(await asyncio.wait_for(b.receive("compat.orders"), WAIT))["n"] for _ in range(20)]
        c.eq("received by the other instance", got, list(range(20)))
        c.true("then none", await nothing(b, "compat.orders"))
    finally:
        await a.close_pools()
        await b.close_pools()


@core_step("a blocked receive is woken by the other instance's send")
async def _():
    a, b = core(), core()
    waiting = None
    try:
        waiting = asyncio.create_task(b.receive("compat.wake"))
        await asyncio.sleep(0.3)  # in BZPOPMIN by now
        c.true("still waiting", not waiting.done())
        t0 = time.monotonic()
        await a.send("compat.wake", {"type": "wake"})
        m = await asyncio.wait_for(waiting, WAIT)
        c.eq("message", m, {"type": "wake"})
        c.true("woken at once, not at BZPOPMIN's timeout", time.monotonic() - t0 < 2,
               f"{time.monotonic() - t0:.2f}s")
    finally:
        if waiting is not None and not waiting.done():
            waiting.cancel()
        if waiting is not None:
            # The receive's own error, if it failed, rather than asyncio's
            # "exception was never retrieved".
            [err] = await asyncio.gather(waiting, return_exceptions=True)
            if isinstance(err, Exception):
                c.true("the receive", False, f"raised {type(err).__name__}: {err}")
        await a.close_pools()
        await b.close_pools()


@core_step("process-specific channels and groups")
async def _():
    a, b = core(), core()
    try:
        ca = await a.new_channel()
        cb = await b.new_channel()
        c.true("specific names", "!" in ca and "!" in cb, f"{ca} {cb}")
        await a.send(cb, {"type": "direct", "text": "to b"})
        c.eq("direct", await asyncio.wait_for(b.receive(cb), WAIT), {"type": "direct", "text": "to b"})
        await a.group_add("room", ca)
        await b.group_add("room", cb)
        c.eq("the group is a sorted set", r.type(asgi + ":group:room"), b"zset")
        await a.group_send("room", {"type": "chat", "text": "hi"})
        c.eq("a's member", await asyncio.wait_for(a.receive(ca), WAIT), {"type": "chat", "text": "hi"})
        c.eq("b's member", await asyncio.wait_for(b.receive(cb), WAIT), {"type": "chat", "text": "hi"})
        await b.group_discard("room", cb)
        await b.group_send("room", {"type": "chat", "text": "after"})
        c.eq("still a member", await asyncio.wait_for(a.receive(ca), WAIT), {"type": "chat", "text": "after"})
        c.true("discarded: nothing", await nothing(b, cb))
    finally:
        await a.close_pools()
        await b.close_pools()


@core_step("a full channel refuses")
async def _():
    a = core(capacity=5)
    try:
        for i in range(5):
            await a.send("compat.full", {"type": "x", "n": i})
        try:
            await a.send("compat.full", {"type": "x", "n": 5})
            c.true("the sixth refused", False, "sent")
        except ChannelFull:
            c.true("the sixth refused", True)
        c.eq("five kept", r.zcard(asgi + "compat.full"), 5)
        await a.flush()
    finally:
        await a.close_pools()


@core_step("an expired message is not received")
async def _():
    a = core(expiry=1)
    try:
        await a.send("compat.stale", {"type": "stale"})
        ttl = r.ttl(asgi + "compat.stale")
        c.true("the channel expires with its messages", 0 <= ttl <= 1, f"ttl {ttl}")
        await asyncio.sleep(2.1)
        c.eq("gone", r.exists(asgi + "compat.stale"), 0)
        c.true("nothing to receive", await nothing(a, "compat.stale"))
    finally:
        await a.close_pools()


@core_step("flush")
async def _():
    a = core()
    try:
        await a.send("compat.left", {"type": "x"})
        await a.group_add("left", "compat.left")
        c.true("keys before", len(r.keys(asgi + "*")) >= 2, f"{r.keys(asgi + '*')}")
        await a.flush()
        c.eq("none after", r.keys(asgi + "*"), [])
    finally:
        await a.close_pools()


@step("the pub/sub layer")
async def _():
    a = RedisPubSubChannelLayer(hosts=[url], prefix=asgi)
    b = RedisPubSubChannelLayer(hosts=[url], prefix=asgi)
    try:
        ca = await a.new_channel()
        cb = await b.new_channel()
        await subscribed(cb)
        await a.send(cb, {"type": "direct", "n": 1})
        c.eq("direct", await asyncio.wait_for(b.receive(cb), WAIT), {"type": "direct", "n": 1})
        await a.group_add("lobby", ca)
        await b.group_add("lobby", cb)
        await subscribed(a._get_group_channel_name("lobby"), 2)
        for i in range(10):
            await a.group_send("lobby", {"type": "chat", "n": i})
        for name, layer, ch in (("a", a, ca), ("b", b, cb)):
            got = [(await asyncio.wait_for(layer.receive(ch), WAIT))["n"] for _ in range(10)]
            c.eq(f"{name}'s member, in order", got, list(range(10)))
        await b.group_discard("lobby", cb)
        await a.group_send("lobby", {"type": "chat", "n": 10})
        c.eq("still a member", (await asyncio.wait_for(a.receive(ca), WAIT))["n"], 10)
        c.true("discarded: nothing", await nothing(b, cb))
        c.eq("no key", r.keys(asgi + "*"), [])
    finally:
        await a.flush()
        await b.flush()


c.done()
