"""The Celery app and tasks celery_queue.py sends and its worker processes
run (`python3 -m celery -A celery_tasks worker`): Celery 5.2 with the Redis
broker (kombu's Redis transport) and the Redis result backend, both at
REDIS_URL, as Celery's documentation configures them. COMPAT_OUT is a
directory where each run of a task appends a line, so the program counts
runs apart from what the server says.
"""

import os
import time

from celery import Celery

url = os.environ["REDIS_URL"]
out = os.environ.get("COMPAT_OUT", ".")

app = Celery("compat", broker=url, backend=url)
app.conf.update(
    task_default_queue="compat",
    result_expires=600,
    # Workers report to the program's log file, not to a terminal.
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    broker_connection_max_retries=3,
)


def _append(line):
    # One write of a short line to a file opened O_APPEND: lines of
    # concurrent runs do not interleave.
    fd = os.open(os.path.join(out, "runs"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@app.task(bind=True)
def record(self, i, pause=0.02):
    """Runs job i: appends "i worker time" to the runs file, returns i*i."""
    time.sleep(pause)
    _append(f"{i} {self.request.hostname} {time.time():.3f}")
    return i * i


@app.task
def add(x, y):
    return x + y


@app.task
def boom(msg):
    raise ValueError(msg)
