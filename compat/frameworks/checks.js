// The checks the Node framework programs share: each program names its
// steps, asserts what an app relies on, and reports every failure on its own
// line ("FAIL step: what"), then exits 1 if any failed. REDIS_URL is the
// server and KEY_PREFIX the pgcache route prefix every key starts with.
"use strict";

const { isDeepStrictEqual, inspect } = require("node:util");

function env() {
  const url = process.env.REDIS_URL;
  if (!url) {
    console.error("REDIS_URL is not set (redis://127.0.0.1:PORT/0)");
    process.exit(2);
  }
  return { url, prefix: process.env.KEY_PREFIX || "" };
}

class Checks {
  constructor(program) {
    this.program = program;
    this.passed = 0;
    this.failed = 0;
    this.stepName = "";
  }

  // step runs fn as one named step; a rejection fails the step and the
  // program goes on with the next one.
  async step(name, fn) {
    this.stepName = name;
    try {
      await fn();
    } catch (e) {
      this.fail(`raised ${describe(e)}`);
    }
  }

  fail(what) {
    this.failed++;
    console.log(`FAIL ${this.program} ${this.stepName}: ${what}`);
  }

  eq(what, got, want) {
    if (isDeepStrictEqual(got, want)) this.passed++;
    else this.fail(`${what}: got ${inspect(got)}, want ${inspect(want)}`);
  }

  ok(what, cond, detail = "") {
    if (cond) this.passed++;
    else this.fail(detail ? `${what}: ${detail}` : what);
  }

  async rejects(what, promise) {
    try {
      await promise;
    } catch {
      this.passed++;
      return;
    }
    this.fail(`${what}: did not fail`);
  }

  done() {
    console.log(`${this.program}: ${this.passed} checks passed, ${this.failed} failed`);
    process.exitCode = this.failed ? 1 : 0;
  }
}

// describe names an error and, for an aborted transaction (ioredis's
// EXECABORT, node-redis's MultiErrorReply), the errors of the commands that
// aborted it: they say which command the server refused.
function describe(e) {
  if (!e) return String(e);
  let s = `${e.name}: ${e.message}`;
  const inner = e.previousErrors || (e.errorIndexes && e.replies && e.errorIndexes.map((i) => e.replies[i]));
  if (Array.isArray(inner) && inner.length) s += ` (${inner.map((x) => (x && x.message) || String(x)).join("; ")})`;
  return s;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = { env, Checks, sleep, describe };
