"""Celery (Debian's python3-celery 5.2 with python3-kombu 5.2) as a job
queue on Redis: the broker is kombu's Redis transport (a queue is a list:
LPUSH to send, BRPOP to take; exchange bindings are sets; messages a worker
holds unacknowledged, such as tasks with an ETA, are kept in a hash indexed
by a sorted set; broadcasts to workers, such as ping and shutdown, go by
PUBLISH/PSUBSCRIBE), and the Redis result backend (a result is a string,
announced by PUBLISH to whoever waits in AsyncResult.get).

Two workers (`python3 -m celery -A celery_tasks worker`, each the default
prefork pool of two processes) run the tasks of celery_tasks.py. Asserted: tasks sent before
any worker runs wait in the queue's list; every task, sent before or while
the workers run, runs exactly once across the workers and its result comes
back; a failing task's error comes
back as its exception; a task with a countdown runs once, not before; a
chain passes results on; the workers answer a ping broadcast and stop on a
shutdown broadcast.

Keys are Celery's own ("compat", "_kombu.binding.*", "unacked*",
"celery-task-meta-*"), whatever KEY_PREFIX says: run it against a server or
a catch-all route of its own.
"""

import ctypes
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import checks

url, _ = checks.env()
out = tempfile.mkdtemp(prefix="pgcache-celery-")
os.environ["COMPAT_OUT"] = out
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import redis  # noqa: E402

from celery_tasks import add, app, boom, record  # noqa: E402

c = checks.Checks("celery")
r = redis.Redis.from_url(url)
N = 40  # tasks in all
EARLY = 10  # of which sent before the workers start
WORKERS = ("w1@compat", "w2@compat")
workers = []


def runs():
    """The lines the task runs appended: (i, worker, time)."""
    try:
        with open(os.path.join(out, "runs")) as f:
            return [(int(i), w, float(t)) for i, w, t in (line.split() for line in f)]
    except FileNotFoundError:
        return []


def until(bound, ok):
    """Polls ok() until it holds, for at most bound seconds."""
    deadline = time.monotonic() + bound
    while not ok():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def die_with_parent():
    """In a worker, before it runs: SIGTERM (a warm shutdown, which ends
    its pool) when this program dies, even killed by a test's timeout."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_worker(name):
    log = open(os.path.join(out, name.split("@")[0] + ".log"), "w")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "-n", name,
         "--pool=prefork", "--concurrency=2", "-Q", "compat",
         "--without-mingle", "--without-gossip", "--without-heartbeat", "-l", "WARNING"],
        cwd=here, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent)


def worker_logs():
    text = []
    for name in WORKERS:
        path = os.path.join(out, name.split("@")[0] + ".log")
        if os.path.exists(path):
            with open(path) as f:
                tail = f.read()[-1500:].strip()
            if tail:
                text.append(f"--- {name}:\n{tail}")
    return "\n".join(text)


sent = []
up = False


@c.step("tasks wait in the queue's list")
def _():
    for k in r.scan_iter("celery-task-meta-*"):
        r.delete(k)
    r.delete("compat")
    for i in range(EARLY):
        sent.append(record.delay(i))
    c.eq("LLEN of the queue", r.llen("compat"), EARLY)
    c.eq("the queue is a list", r.type("compat"), b"list")


@c.step("workers start and answer a ping broadcast")
def _():
    global up
    workers.extend(start_worker(w) for w in WORKERS)
    deadline = time.monotonic() + 30
    seen = set()
    while time.monotonic() < deadline and seen != set(WORKERS):
        for reply in app.control.ping(timeout=0.5):
            seen.update(reply)
        if any(w.poll() is not None for w in workers):
            break
    up = seen == set(WORKERS)
    c.true("both workers answered", up, f"answered: {sorted(seen)}\n{worker_logs()}")


def needs_workers(fn):
    """Runs fn only when the workers came up: without them every wait
    would only time out."""
    def run():
        if not up:
            raise RuntimeError("not run: the workers did not come up")
        fn()
    return run


@c.step("every task runs exactly once")
@needs_workers
def _():
    # Sent while both workers wait in BRPOP, a little long each: both
    # take some.
    for i in range(EARLY, N):
        sent.append(record.delay(i, pause=0.05))
    results = [a.get(timeout=30) for a in sent]
    c.eq("results", results, [i * i for i in range(N)])
    done = runs()
    c.eq("runs of each task", sorted(i for i, _, _ in done), list(range(N)))
    by = {w: sum(1 for _, x, _ in done if x == w) for w in WORKERS}
    c.true("both workers took tasks", all(by.values()), f"runs per worker {by}")
    c.eq("the queue is empty", r.llen("compat"), 0)
    c.eq("the states", {a.state for a in sent}, {"SUCCESS"})


@c.step("a failing task's error comes back")
@needs_workers
def _():
    a = boom.delay("it broke")
    try:
        a.get(timeout=30)
        c.true("get raises", False, "returned")
    except ValueError as e:
        c.eq("the task's exception", str(e), "it broke")
    c.eq("state", a.state, "FAILURE")


@c.step("a countdown task runs once, not before")
@needs_workers
def _():
    t0 = time.time()
    a = record.apply_async((1000,), countdown=1.5)
    # A worker takes it at once and holds it, unacknowledged, until its
    # time: kombu keeps it in the hash "unacked", indexed by the sorted set
    # "unacked_index" (for redelivery if the worker died).
    held = until(1.2, lambda: r.hlen("unacked") == 1 and r.zcard("unacked_index") == 1)
    c.true("held unacknowledged", held, f"HLEN unacked {r.hlen('unacked')}, ZCARD unacked_index {r.zcard('unacked_index')}")
    c.eq("result", a.get(timeout=30), 1000 * 1000)
    late = [t for i, _, t in runs() if i == 1000]
    c.eq("runs", len(late), 1)
    c.true("not before its countdown", late and late[0] >= t0 + 1.4, f"ran {late[0] - t0:.2f}s after" if late else "")
    # Acknowledged (the worker does it around the run), it leaves both.
    acked = until(5, lambda: r.hlen("unacked") == 0 and r.zcard("unacked_index") == 0)
    c.true("acknowledged", acked, f"HLEN unacked {r.hlen('unacked')}, ZCARD unacked_index {r.zcard('unacked_index')}")


@c.step("a chain passes results on")
@needs_workers
def _():
    c.eq("(1+2)+3", (add.s(1, 2) | add.s(3))().get(timeout=30), 6)


@c.step("workers stop on a shutdown broadcast")
@needs_workers
def _():
    app.control.broadcast("shutdown")
    for w, name in zip(workers, WORKERS):
        try:
            c.eq(f"{name} exit status", w.wait(timeout=20), 0)
        except subprocess.TimeoutExpired:
            c.true(f"{name} stopped", False, "still running 20s after the broadcast")


for w in workers:
    if w.poll() is None:
        w.terminate()
        try:
            w.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
if c.failed:
    logs = worker_logs()
    if logs:
        print(logs, flush=True)
shutil.rmtree(out, ignore_errors=True)
# Results unsubscribe when collected: now, not while Python shuts down.
sent.clear()
gc.collect()
app.close()
c.done()
