// A session store on hashes: the npm package redis-sessions (4.0, on its own
// node-redis 4), used as its README says. A session is a hash
// ("<ns>:<app>:<token>": id, r, w, ip, la, ttl, d) updated field by field in
// MULTIs (HSET, HINCRBY, HDEL, HMGET); the sessions of a user are a set
// ("<ns>:<app>:us:<id>"); activity and expiry are sorted sets
// ("<ns>:<app>:_sessions", "<ns>:<app>:_users", "<ns>:SESSIONS"). With
// `cachetime`, each app server keeps sessions in its memory and drops one
// when another server PUBLISHes its change on "<ns>:cache".
//
// Asserted: a session's data round-trips and its counters count; an update
// changes only the fields it names; a user's sessions and an app's activity
// are listed and counted; kill, killsoid and killall remove what they
// should and nothing else; two app servers' caches stay coherent through
// pub/sub; an idle session is refused once past its ttl and wiped.
//
// The namespace is KEY_PREFIX + "rs".
"use strict";

const { default: RedisSessions } = require("redis-sessions");
const { createClient } = require("redis");
const { env, Checks, sleep } = require("./checks");

const { url, prefix } = env();
const ns = prefix + "rs";
const app = `compat${process.pid % 100000}`;
const c = new Checks("redis-sessions");

// A store as an app server makes it; wipe: 0 (the test calls the wiper
// itself rather than wait its ten-second interval).
function store(opts = {}) {
  return new RedisSessions({ namespace: ns, wipe: 0, options: { url }, ...opts });
}

// until polls ok() until it holds, for at most ms.
async function until(ms, ok) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ok()) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

async function main() {
  const rs = store();
  const stores = [rs];
  const client = createClient({ url });
  client.on("error", (e) => c.fail(`redis client error: ${e.message}`));
  await client.connect();
  const key = (token) => `${ns}:${app}:${token}`;
  let expiring, expiringAt;
  try {
    await c.step("start clean", async () => {
      const stale = await client.keys(`${ns}:*`);
      if (stale.length) await client.del(stale);
    });

    await c.step("the store's commands are served", async () => {
      // The store sends most of them in MULTIs, and node-redis 4 reports a
      // command refused there only as EXECABORT: sent here one by one, on
      // keys of their own, a refused one is named.
      const k = `${ns}:probe`;
      const sent = [
        ["HSET", `${k}:h`, "f", "1"], ["HINCRBY", `${k}:h`, "f", "1"], ["HMGET", `${k}:h`, "f", "g"],
        ["HDEL", `${k}:h`, "f"], ["HGETALL", `${k}:h`], ["HEXISTS", `${k}:h`, "f"],
        ["SADD", `${k}:s`, "m"], ["SMEMBERS", `${k}:s`], ["SREM", `${k}:s`, "m"],
        ["ZADD", `${k}:z`, "1", "m"], ["ZSCORE", `${k}:z`, "m"], ["ZCOUNT", `${k}:z`, "0", "+inf"],
        ["ZRANGE", `${k}:z`, "+inf", "0", "BYSCORE", "REV"], ["ZRANGEBYSCORE", `${k}:z`, "-inf", "2"],
        ["ZREM", `${k}:z`, "m"], ["PUBLISH", `${k}:c`, "x"], ["PUBSUB", "NUMSUB", `${k}:c`],
      ];
      const refused = [];
      for (const args of sent) {
        try {
          await client.sendCommand(args);
        } catch (e) {
          const name = args[0] === "PUBSUB" ? `PUBSUB ${args[1]}` : args[0];
          refused.push(`${name}: ${e.message.replace(/, with args beginning with:.*/s, "")}`);
        }
      }
      c.ok("none refused", refused.length === 0, refused.join("; "));
      await client.del([`${k}:h`, `${k}:s`, `${k}:z`]);
    });

    await c.step("a session that will go idle", async () => {
      expiring = (await rs.create({ app, id: "idle", ip: "10.0.0.9", ttl: 10 })).token;
      expiringAt = Date.now();
      c.eq("score in SESSIONS: its expiry", Number(await client.zScore(`${ns}:SESSIONS`, `${app}:${expiring}:idle`)), Math.floor(expiringAt / 1000) + 10);
    });

    let token;
    await c.step("create and get", async () => {
      ({ token } = await rs.create({ app, id: "user1", ip: "192.168.22.58", ttl: 3600, d: { foo: "bar", unread: 34 } }));
      c.ok("a 64-character token", /^[A-Za-z0-9]{64}$/.test(token), token);
      c.eq("a hash", await client.type(key(token)), "hash");
      const h = await client.hGetAll(key(token));
      c.eq("its fields", Object.keys(h).sort(), ["d", "id", "ip", "la", "r", "ttl", "w"]);
      c.eq("data as JSON in d", JSON.parse(h.d), { foo: "bar", unread: 34 });
      const s = await rs.get({ app, token });
      c.eq("get", { id: s.id, r: s.r, w: s.w, ttl: s.ttl, ip: s.ip, d: s.d }, { id: "user1", r: 1, w: 1, ttl: 3600, ip: "192.168.22.58", d: { foo: "bar", unread: 34 } });
      c.eq("reads counted (HINCRBY)", (await rs.get({ app, token })).r, 2);
      c.eq("r in the hash", await client.hGet(key(token), "r"), "3");
    });

    await c.step("set changes only what it names", async () => {
      if (!token) throw new Error("not run: no session was created");
      const s = await rs.set({ app, token, d: { unread: 12, foo: null, last: "/read/news" } });
      c.eq("returned data", s.d, { unread: 12, last: "/read/news" });
      c.eq("writes counted", s.w, 2);
      const h = await client.hGetAll(key(token));
      c.eq("d in the hash", JSON.parse(h.d), { unread: 12, last: "/read/news" });
      c.eq("other fields kept", [h.id, h.ip, h.ttl], ["user1", "192.168.22.58", "3600"]);
      await rs.set({ app, token, d: { unread: null, last: null } });
      c.eq("d removed when empty (HDEL)", await client.hExists(key(token), "d"), 0);
      c.eq("get without data", (await rs.get({ app, token })).d, undefined);
    });

    let others;
    await c.step("a user's sessions and the app's activity", async () => {
      if (!token) throw new Error("not run: no session was created");
      others = [];
      for (const [id, ip] of [["user1", "10.0.0.2"], ["user1", "10.0.0.3"], ["user2", "10.0.0.4"]]) {
        others.push((await rs.create({ app, id, ip, ttl: 3600 })).token);
      }
      c.eq("the user's set", (await client.sMembers(`${ns}:${app}:us:user1`)).sort(), [token, others[0], others[1]].sort());
      const soid = await rs.soid({ app, id: "user1" });
      c.eq("soid", soid.sessions.map((s) => s.ip).sort(), ["10.0.0.2", "10.0.0.3", "192.168.22.58"]);
      // idle is one user too, active within the last minute.
      c.eq("activity: users, not sessions", (await rs.activity({ app, deltaTime: 60 })).activity, 3);
      c.eq("soapp", (await rs.soapp({ app, deltaTime: 60 })).sessions.length, 5);
    });

    await c.step("kill and killsoid", async () => {
      if (!others || others.length < 3) throw new Error("not run: the sessions were not created");
      c.eq("kill", await rs.kill({ app, token: others[0] }), { kill: 1 });
      c.eq("killed: get", await rs.get({ app, token: others[0] }), null);
      c.eq("killed: its hash", await client.exists(key(others[0])), 0);
      c.eq("kill again", await rs.kill({ app, token: others[0] }), { kill: 0 });
      c.eq("killsoid", await rs.killsoid({ app, id: "user1" }), { kill: 2 });
      c.eq("the user's set gone", await client.exists(`${ns}:${app}:us:user1`), 0);
      c.eq("user2 kept", (await rs.get({ app, token: others[2] })).id, "user2");
      c.eq("activity", (await rs.activity({ app, deltaTime: 60 })).activity, 2);
    });

    await c.step("two app servers' caches stay coherent", async () => {
      const a = store({ cachetime: 60 });
      const b = store({ cachetime: 60 });
      stores.push(a, b);
      // Both subscribed to <ns>:cache before anything is published.
      const subscribed = await until(5000, async () => (await client.pubSubNumSub(`${ns}:cache`))[`${ns}:cache`] === 2);
      c.ok("both subscribed", subscribed, JSON.stringify(await client.pubSubNumSub(`${ns}:cache`)));
      const t = (await a.create({ app, id: "user3", ip: "10.0.0.5", ttl: 3600, d: { v: 1 } })).token;
      c.eq("a reads it", (await a.get({ app, token: t })).d, { v: 1 });
      // Changed behind the stores' backs: a serves its copy.
      await client.hSet(key(t), "d", JSON.stringify({ v: "behind" }));
      c.eq("a serves from its memory", (await a.get({ app, token: t })).d, { v: 1 });
      await b.set({ app, token: t, d: { v: 2 } });
      const seen = await until(5000, async () => (await a.get({ app, token: t }))?.d?.v === 2);
      c.ok("a sees b's change", seen, JSON.stringify(await a.get({ app, token: t })));
      await b.kill({ app, token: t });
      const gone = await until(5000, async () => (await a.get({ app, token: t })) === null);
      c.ok("a sees b's kill", gone, JSON.stringify(await a.get({ app, token: t })));
    });

    await c.step("an idle session expires and is wiped", async () => {
      if (!expiring) throw new Error("no idle session was created");
      // ttl 10 s, in whole seconds: idle past it from 11 s on.
      await sleep(expiringAt + 11_500 - Date.now());
      c.eq("get refuses it", await rs.get({ app, token: expiring }), null);
      await rs._wipe(); // the store's housekeeping, run every `wipe` seconds
      c.eq("its hash wiped", await client.exists(key(expiring)), 0);
      c.eq("out of SESSIONS", await client.zScore(`${ns}:SESSIONS`, `${app}:${expiring}:idle`), null);
      c.eq("out of the user's set", await client.exists(`${ns}:${app}:us:idle`), 0);
    });

    await c.step("killall", async () => {
      c.eq("killall", await rs.killall({ app }), { kill: 1 });
      c.eq("no key left", await client.keys(`${ns}:*`), []);
    });
  } finally {
    for (const s of stores) {
      await s.quit().catch(() => {});
      if (s.redissub) await s.redissub.quit().catch(() => {});
    }
    await client.close();
  }
  c.done();
}

main().catch((e) => {
  console.log(`FAIL redis-sessions: ${e && e.stack}`);
  process.exitCode = 1;
});
