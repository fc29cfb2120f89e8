// connect-redis (node-redis 5) as the session store of a real express +
// express-session app, configured as its README says, driven over HTTP:
// a session created, read back, touched, destroyed and expired; then the
// store's own API an admin page uses: get, touch, all, length, ids, clear
// (SCAN MATCH <prefix>*, which must leave every other key alone).
//
// Every key is KEY_PREFIX + "sess:" + session id.
"use strict";

const express = require("express");
const session = require("express-session");
const { RedisStore } = require("connect-redis");
const { createClient } = require("redis");
const { env, Checks, sleep } = require("./checks");

const { url, prefix } = env();
const sessPrefix = prefix + "sess:";
const c = new Checks("express-session");

async function main() {
  const client = createClient({ url });
  client.on("error", (e) => c.fail(`redis client error: ${e.message}`));
  await client.connect();
  const store = new RedisStore({ client, prefix: sessPrefix });

  const app = express();
  app.use(
    session({
      store,
      secret: "compat test secret",
      resave: false,
      saveUninitialized: false,
      cookie: { maxAge: 60_000 },
    }),
  );
  app.get("/visit", (req, res) => {
    req.session.views = (req.session.views || 0) + 1;
    res.json({ views: req.session.views, id: req.sessionID });
  });
  app.get("/peek", (req, res) => res.json({ views: req.session.views || 0, id: req.sessionID }));
  app.get("/short", (req, res) => {
    req.session.cookie.maxAge = 1000;
    req.session.views = 1;
    res.json({ views: 1, id: req.sessionID });
  });
  app.get("/logout", (req, res, next) => req.session.destroy((err) => (err ? next(err) : res.end("bye"))));
  app.use((err, req, res, next) => res.status(500).end(String(err && err.message)));

  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const base = `http://127.0.0.1:${server.address().port}`;

  // get requests path with the session cookie, if any, and returns the
  // JSON answer and the cookie the app set.
  async function get(path, cookie) {
    const res = await fetch(base + path, { headers: cookie ? { cookie } : {} });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${body}`);
    const set = res.headers.get("set-cookie");
    return { json: path === "/logout" ? null : JSON.parse(body), cookie: set ? set.split(";")[0] : cookie };
  }

  try {
    let cookie, id;
    await c.step("start clean", async () => {
      const stale = await keysOf(client, sessPrefix);
      if (stale.length) await client.del(stale);
    });

    await c.step("session round trip", async () => {
      const first = await get("/visit");
      c.eq("first visit", first.json.views, 1);
      c.ok("cookie set", first.cookie && first.cookie.startsWith("connect.sid="), `cookie ${first.cookie}`);
      const second = await get("/visit", first.cookie);
      c.eq("second visit", second.json.views, 2);
      c.eq("same session", second.json.id, first.json.id);
      ({ cookie } = first);
      id = first.json.id;
      c.eq("stored under the prefix", await client.exists(sessPrefix + id), 1);
      const ttl = await client.ttl(sessPrefix + id);
      c.ok("ttl from the cookie's maxAge", ttl > 50 && ttl <= 60, `ttl ${ttl}`);
      const sess = await store.get(id);
      c.eq("store.get", sess && sess.views, 2);
    });

    await c.step("touch", async () => {
      await client.expire(sessPrefix + id, 10);
      const peek = await get("/peek", cookie); // unmodified: express-session touches
      c.eq("read without change", peek.json.views, 2);
      let ttl = await client.ttl(sessPrefix + id);
      c.ok("request touched the session", ttl > 50 && ttl <= 60, `ttl ${ttl}`);
      const sess = await store.get(id);
      sess.cookie.expires = new Date(Date.now() + 120_000);
      await store.touch(id, sess);
      ttl = await client.ttl(sessPrefix + id);
      c.ok("store.touch", ttl > 110 && ttl <= 120, `ttl ${ttl}`);
    });

    await c.step("all/length/ids", async () => {
      const others = [];
      for (let i = 0; i < 3; i++) others.push((await get("/visit")).json.id);
      await client.set(prefix + "other-app:k", "keep");
      await client.set(prefix + "sessions", "keep"); // looks like the prefix, is not under it
      c.eq("length", await store.length(), 4);
      c.eq("ids", (await store.ids()).sort(), [id, ...others].sort());
      const all = await store.all();
      c.eq("all ids", all.map((s) => s.id).sort(), [id, ...others].sort());
      c.eq("all data", all.find((s) => s.id === id)?.views, 2);
    });

    await c.step("destroy", async () => {
      await get("/logout", cookie);
      c.eq("key gone", await client.exists(sessPrefix + id), 0);
      c.eq("store.get", await store.get(id), null);
      const again = await get("/visit", cookie);
      c.eq("old cookie starts over", again.json.views, 1);
      c.ok("with a new session", again.json.id !== id, "same id");
      await store.destroy(again.json.id);
      c.eq("store.destroy", await client.exists(sessPrefix + again.json.id), 0);
    });

    await c.step("expiry", async () => {
      const short = await get("/short");
      const ttl = await client.ttl(sessPrefix + short.json.id);
      // TTL rounds: 0 is a key with under half a second left.
      c.ok("ttl of a 1s cookie", ttl >= 0 && ttl <= 1, `ttl ${ttl}`);
      await sleep(1500);
      c.eq("expired in the store", await store.get(short.json.id), null);
      c.eq("key gone", await client.exists(sessPrefix + short.json.id), 0);
      c.eq("cookie of an expired session starts over", (await get("/visit", short.cookie)).json.views, 1);
    });

    await c.step("clear", async () => {
      c.ok("sessions before", (await store.length()) > 0, "none");
      await store.clear();
      c.eq("length after clear", await store.length(), 0);
      c.eq("no key left under the prefix", await keysOf(client, sessPrefix), []);
      c.eq("other app's key kept", await client.get(prefix + "other-app:k"), "keep");
      c.eq("look-alike key kept", await client.get(prefix + "sessions"), "keep");
      await client.del([prefix + "other-app:k", prefix + "sessions"]);
    });
  } finally {
    server.close();
    await client.close();
  }
  c.done();
}

// keysOf lists the keys under p with KEYS, apart from the store's SCAN.
async function keysOf(client, p) {
  return (await client.keys(p + "*")).sort();
}

main().catch((e) => {
  console.log(`FAIL express-session: ${e && e.stack}`);
  process.exitCode = 1;
});
