"""The checks the Python framework programs share: each program names its
steps, asserts what an app relies on, and reports every failure on its own
line ("FAIL step: what"), then exits 1 if any failed.

The programs run under Debian's /usr/bin/python3 with Debian's packages
(install.sh); REDIS_URL is the server and KEY_PREFIX the pgcache route
prefix every key of the run starts with ("mem:", "pg:", "vk:", or "" on a
plain Redis).
"""

import os
import sys
import traceback


def env():
    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit("REDIS_URL is not set (redis://127.0.0.1:PORT/0)")
    return url, os.environ.get("KEY_PREFIX", "")


class Checks:
    def __init__(self, program):
        self.program = program
        self.failed = 0
        self.passed = 0
        self.step_name = ""

    def step(self, name):
        """Decorator: run fn now as one step; an exception fails the step
        and the program goes on with the next one."""

        def run(fn):
            self.step_name = name
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - any error is the step's failure
                self.failed += 1
                last = traceback.extract_tb(e.__traceback__)[-1]
                print(f"FAIL {self.program} {name}: raised {type(e).__name__}: {e} "
                      f"(at {os.path.basename(last.filename)}:{last.lineno})", flush=True)
            return fn

        return run

    def eq(self, what, got, want):
        self.true(what, got == want, f"got {got!r}, want {want!r}")

    def true(self, what, ok, detail=""):
        if ok:
            self.passed += 1
            return
        self.failed += 1
        print(f"FAIL {self.program} {self.step_name}: {what}" + (f": {detail}" if detail else ""),
              flush=True)

    def raises(self, what, exc, fn):
        try:
            fn()
        except exc:
            self.passed += 1
            return
        except Exception as e:  # noqa: BLE001
            self.true(what, False, f"raised {type(e).__name__}: {e}, want {exc.__name__}")
            return
        self.true(what, False, f"did not raise {exc.__name__}")

    def done(self):
        print(f"{self.program}: {self.passed} checks passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)
