"""redis-py 4.3 (Debian's python3-redis, RESP2) with client-side caching's
REDIRECT form, driven by tracking_test.go one request at a time: a JSON
object per line on stdin, the reply a JSON object per line on stdout.

Two connections, as a RESP2 app with a local cache has them: `sub`,
subscribed to __redis__:invalidate, and `data`, with CLIENT TRACKING on
REDIRECT <sub's id>, whose reads pgcache tracks and whose invalidations
arrive on `sub` as Pub/Sub messages.

  {"op": "get", "key": k}   -> {"value": v or null}, read on `data`
  {"op": "sync"}            -> {"keys": [...], "nulls": n}: the invalidations
                               that arrived since the last request, after two
                               PINGs on `sub` (a message queued before the
                               first is written before the second's reply)
  {"op": "wait", "key": k, "timeout": s}
                            -> {"keys": [...]} once a message names k, or
                               {"error": ...} after s seconds

The first line is {"ready": true}. REDIS_URL is the server.
"""

import json
import os
import sys
import time

import redis

CHANNEL = b"__redis__:invalidate"


def out(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


url = os.environ.get("REDIS_URL")
if not url:
    sys.exit("REDIS_URL is not set (redis://127.0.0.1:PORT/0)")



def connection():
    """A client on one connection of its own."""
    return redis.Redis(connection_pool=redis.ConnectionPool.from_url(url), single_connection_client=True)


sub = connection()
sub_id = sub.client_id()
conn = sub.connection
conn.send_command("SUBSCRIBE", CHANNEL)
confirm = conn.read_response()
if not (isinstance(confirm, list) and confirm[0] == b"subscribe"):
    sys.exit(f"SUBSCRIBE {CHANNEL!r}: {confirm!r}")

data = connection()
if not data.client_tracking_on(clientid=sub_id):
    sys.exit("CLIENT TRACKING on REDIRECT failed")

pending_keys = []  # invalidated keys not yet reported
pending_nulls = 0  # "drop everything" messages not yet reported


def take(msg):
    """Record an invalidation message; False for anything else (a PING's
    reply)."""
    global pending_nulls
    if not (isinstance(msg, list) and len(msg) == 3 and msg[0] == b"message" and msg[1] == CHANNEL):
        return False
    if msg[2] is None:
        pending_nulls += 1
    else:
        pending_keys.extend(k.decode() for k in msg[2])
    return True


def ping():
    conn.send_command("PING")
    while take(conn.read_response()):
        pass


def report():
    global pending_keys, pending_nulls
    rep = {"keys": pending_keys, "nulls": pending_nulls}
    pending_keys, pending_nulls = [], 0
    return rep


out({"ready": True})
for line in sys.stdin:
    try:
        req = json.loads(line)
        op = req.get("op")
        if op == "get":
            v = data.get(req["key"])
            out({"value": None if v is None else v.decode()})
        elif op == "sync":
            ping()
            ping()
            out(report())
        elif op == "wait":
            deadline = time.monotonic() + float(req["timeout"])
            while req["key"] not in pending_keys:
                left = deadline - time.monotonic()
                if left <= 0 or not conn.can_read(timeout=left):
                    break
                take(conn.read_response())
            if req["key"] in pending_keys:
                out(report())
            else:
                out({"error": f"no invalidation of {req['key']} within {req['timeout']}s; got {report()}"})
        else:
            out({"error": f"unknown op {op!r}"})
    except Exception as e:  # noqa: BLE001 - any error is the request's
        out({"error": f"{line.strip()}: {type(e).__name__}: {e}"})
