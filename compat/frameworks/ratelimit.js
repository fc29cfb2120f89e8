// A sliding-window rate limiter on sorted sets: the npm package ratelimiter
// (3.4) on ioredis 5, used as its README says (`new Limiter({id, db, max,
// duration}).get(cb)`, a request admitted while `remaining` > 0). Each call
// is one MULTI of ZREMRANGEBYSCORE (drop what left the window), ZCARD,
// ZADD (this call, scored by its microsecond clock), ZRANGE, ZREMRANGEBYRANK
// and PEXPIRE on the key "limit:<id>".
//
// It asserts what an app relies on: N calls admitted then the next refused,
// the window sliding (calls leave it one by one as they age, not all at
// once as in a fixed window), ids limited apart, the key's lifetime the
// window's, and exactly N admitted out of many concurrent calls from
// several connections (each call is one atomic MULTI).
//
// Keys are "limit:<id>" whatever KEY_PREFIX says (the library fixes them):
// run it against a server or a catch-all route of its own.
"use strict";

const Redis = require("ioredis");
const Limiter = require("ratelimiter");
const { env, Checks, sleep } = require("./checks");

const { url } = env();
const c = new Checks("ratelimiter");
const run = `${process.pid}-${Date.now()}`;

// get asks the limiter once.
function get(limiter) {
  return new Promise((resolve, reject) => limiter.get((err, info) => (err ? reject(err) : resolve(info))));
}

// nextMicro waits until the library's clock has moved on: two calls in one
// microsecond would be one sorted-set member (the library's own limit, not
// the server's), so concurrent calls are started a microsecond apart.
function nextMicro() {
  const t = process.hrtime.bigint() / 1000n;
  while (process.hrtime.bigint() / 1000n === t);
}

async function main() {
  const db = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  db.on("error", (e) => c.fail(`ioredis error: ${e.message}`));
  await db.connect();
  try {
    await c.step("admits N then refuses", async () => {
      const id = `admit-${run}`;
      const limiter = new Limiter({ id, db, max: 5, duration: 60_000 });
      const remaining = [];
      for (let i = 0; i < 8; i++) remaining.push((await get(limiter)).remaining);
      // Admitted while remaining > 0: five, then none.
      c.eq("remaining per call", remaining, [5, 4, 3, 2, 1, 0, 0, 0]);
      c.eq("a sorted set", await db.type(`limit:${id}`), "zset");
      c.eq("the window holds max calls", await db.zcard(`limit:${id}`), 5);
      const pttl = await db.pttl(`limit:${id}`);
      c.ok("lives as long as the window", pttl > 55_000 && pttl <= 60_000, `pttl ${pttl}`);
      const info = await get(limiter);
      const now = Date.now() / 1000;
      c.eq("total", info.total, 5);
      c.ok("reset within the window", info.reset >= Math.floor(now) && info.reset <= now + 61, `reset ${info.reset}, now ${now}`);
    });

    await c.step("ids apart", async () => {
      const a = new Limiter({ id: `a-${run}`, db, max: 2, duration: 60_000 });
      const b = new Limiter({ id: `b-${run}`, db, max: 2, duration: 60_000 });
      await get(a);
      await get(a);
      c.eq("a exhausted", (await get(a)).remaining, 0);
      c.eq("b untouched", (await get(b)).remaining, 2);
    });

    await c.step("the window slides", async () => {
      // duration 2s: three calls at t0, two at t0+1s, then at t0+2.2s the
      // first three have left the window and the last two have not.
      const duration = 2000;
      const limiter = new Limiter({ id: `slide-${run}`, db, max: 5, duration });
      const t0 = Date.now();
      for (let i = 0; i < 3; i++) await get(limiter);
      await sleep(t0 + 1000 - Date.now());
      const second = [(await get(limiter)).remaining, (await get(limiter)).remaining];
      const t1 = Date.now();
      c.eq("five admitted in the window", second, [2, 1]);
      c.eq("the sixth refused", (await get(limiter)).remaining, 0);
      if (Date.now() - t0 > duration) {
        c.fail(`the calls took ${Date.now() - t0} ms, past the ${duration} ms window: no slide to see`);
        return;
      }
      // The refused call is in the window too (the library counts every
      // call): three calls of t0+1s are left when t0's have aged out.
      await sleep(t0 + duration + 200 - Date.now());
      c.ok("still inside the second calls' window", Date.now() < t1 + duration, `${Date.now() - t1} ms after them`);
      const after = [];
      for (let i = 0; i < 3; i++) after.push((await get(limiter)).remaining);
      c.eq("the first calls left, the later ones count", after, [2, 1, 0]);
      await sleep(duration + 100);
      c.eq("all aged out", (await get(limiter)).remaining, 5);
    });

    await c.step("concurrent calls from several connections", async () => {
      const conns = [];
      for (let i = 0; i < 4; i++) {
        const r = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
        r.on("error", (e) => c.fail(`ioredis error: ${e.message}`));
        await r.connect();
        conns.push(r);
      }
      try {
        const id = `burst-${run}`;
        const limiters = conns.map((r) => new Limiter({ id, db: r, max: 10, duration: 60_000 }));
        const calls = [];
        for (let i = 0; i < 40; i++) {
          nextMicro();
          calls.push(get(limiters[i % limiters.length]));
        }
        const infos = await Promise.all(calls);
        c.eq("admitted of 40", infos.filter((i) => i.remaining > 0).length, 10);
        c.eq("each remaining count seen once", infos.map((i) => i.remaining).filter((r) => r > 0).sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      } finally {
        for (const r of conns) r.disconnect();
      }
    });

    await c.step("clean up", async () => {
      const keys = await db.keys(`limit:*${run}`);
      c.eq("keys of this run", keys.length, 5);
      if (keys.length) await db.del(...keys);
    });
  } finally {
    db.disconnect();
  }
  c.done();
}

main().catch((e) => {
  console.log(`FAIL ratelimiter: ${e && e.stack}`);
  process.exitCode = 1;
});
