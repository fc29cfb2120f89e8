// keyv with its Redis adapter (@keyv/redis on node-redis 5), made with
// createKeyv and a namespace as its README says, and cache-manager on top:
// set/get with TTLs, setMany/getMany (MULTI), has, delete, deleteMany
// (MULTI), and clear, which deletes what SCAN MATCH "<namespace>::*"
// finds and must leave other namespaces and other keys alone.
//
// The adapter reports Redis errors as "error" events, not as rejections:
// each one is counted as a failure here.
//
// Every key is KEY_PREFIX + "keyv::" + name (KEY_PREFIX + "cm::" for
// cache-manager's store).
"use strict";

const { createKeyv } = require("@keyv/redis");
const { createCache } = require("cache-manager");
const { createClient } = require("redis");
const { env, Checks, sleep } = require("./checks");

const { url, prefix } = env();
const ns = prefix + "keyv";
const c = new Checks("keyv");

function open(namespace) {
  const keyv = createKeyv(url, { namespace });
  keyv.on("error", (e) => c.fail(`keyv error event (${namespace}): ${e && e.message}`));
  return keyv;
}

async function main() {
  const raw = createClient({ url });
  raw.on("error", (e) => c.fail(`redis client error: ${e.message}`));
  await raw.connect();
  const keyv = open(ns);
  const neighbour = open(prefix + "keyv-other"); // another namespace on the same route
  const full = (name) => `${ns}::${name}`;
  const cache = createCache({ stores: [open(prefix + "cm")] });

  try {
    await c.step("set/get", async () => {
      c.eq("set", await keyv.set("user:1", { name: "ada", langs: ["en", "fr"] }), true);
      c.eq("get", await keyv.get("user:1"), { name: "ada", langs: ["en", "fr"] });
      c.eq("get missing", await keyv.get("nope"), undefined);
      c.eq("stored under the namespace", await raw.exists(full("user:1")), 1);
      c.eq("has", await keyv.has("user:1"), true);
      c.eq("has missing", await keyv.has("nope"), false);
    });

    await c.step("ttl honoured", async () => {
      await keyv.set("short", "v", 1000);
      await keyv.set("long", "v", 60_000);
      const pttl = await raw.pTTL(full("short"));
      c.ok("server ttl", pttl > 0 && pttl <= 1000, `pttl ${pttl}`);
      c.eq("readable before expiry", await keyv.get("short"), "v");
      await sleep(1500);
      c.eq("gone after expiry", await keyv.get("short"), undefined);
      c.eq("gone from the server", await raw.exists(full("short")), 0);
      c.eq("longer ttl kept", await keyv.get("long"), "v");
    });

    await c.step("setMany/getMany", async () => {
      const res = await keyv.setMany([
        { key: "m1", value: 1 },
        { key: "m2", value: "two", ttl: 30_000 },
        { key: "m3", value: [3] },
      ]);
      // keyv answers undefined when the adapter does the batch itself.
      c.ok("setMany", res === undefined || (Array.isArray(res) && res.every(Boolean)), `got ${res}`);
      c.eq("getMany", await keyv.getMany(["m1", "m2", "m3", "m-absent"]), [1, "two", [3], undefined]);
      const ttl = await raw.ttl(full("m2"));
      c.ok("setMany ttl", ttl > 0 && ttl <= 30, `ttl ${ttl}`);
      c.eq("no ttl without one", await raw.ttl(full("m1")), -1);
    });

    await c.step("delete/deleteMany", async () => {
      c.eq("delete", await keyv.delete("m3"), true);
      c.eq("deleted", await keyv.get("m3"), undefined);
      c.eq("deleteMany", await keyv.deleteMany(["m1", "m2"]), true);
      c.eq("deleted many", await keyv.getMany(["m1", "m2"]), [undefined, undefined]);
    });

    await c.step("cache-manager", async () => {
      cache.on("set", ({ key, error }) => error && c.fail(`cache-manager set ${key}: ${error.message}`));
      c.eq("set", await cache.set("a", { x: 1 }, 60_000), { x: 1 });
      c.eq("get", await cache.get("a"), { x: 1 });
      const ttl = await raw.ttl(`${prefix}cm::a`);
      c.ok("ttl", ttl > 50 && ttl <= 60, `ttl ${ttl}`);
      await cache.mset([
        { key: "b", value: 2 },
        { key: "c", value: 3, ttl: 30_000 },
      ]);
      c.eq("mget", await cache.mget(["a", "b", "c", "absent"]), [{ x: 1 }, 2, 3, undefined]);
      let calls = 0;
      const compute = async () => ++calls;
      await cache.wrap("w", compute, 60_000);
      c.eq("wrap from the cache", await cache.wrap("w", compute, 60_000), 1);
      c.eq("wrap computed once", calls, 1);
      c.eq("mdel", await cache.mdel(["b", "c"]), true);
      c.eq("mdel deleted", await cache.mget(["b", "c"]), [undefined, undefined]);
      await cache.clear();
      c.eq("clear", await cache.get("a"), undefined);
      c.eq("nothing left", await raw.keys(`${prefix}cm::*`), []);
    });

    await c.step("clear keeps other namespaces", async () => {
      await neighbour.set("n", "keep");
      await raw.set(prefix + "other-app:k", "keep");
      await raw.set(ns + "ish", "keep"); // starts like the namespace, is not in it
      await keyv.set("c1", 1);
      await keyv.clear();
      c.eq("cleared", await keyv.getMany(["c1", "user:1", "long"]), [undefined, undefined, undefined]);
      c.eq("nothing left in the namespace", await raw.keys(`${ns}::*`), []);
      c.eq("other namespace kept", await neighbour.get("n"), "keep");
      c.eq("other app's key kept", await raw.get(prefix + "other-app:k"), "keep");
      c.eq("look-alike key kept", await raw.get(ns + "ish"), "keep");
      await neighbour.clear();
      await raw.del([prefix + "other-app:k", ns + "ish"]);
    });
  } finally {
    await cache.disconnect();
    await keyv.disconnect();
    await neighbour.disconnect();
    await raw.close();
  }
  c.done();
}

main().catch((e) => {
  console.log(`FAIL keyv: ${e && e.stack}`);
  process.exitCode = 1;
});
