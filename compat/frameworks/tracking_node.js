// tracking_node.js: node-redis 5 with RESP 3 and its clientSideCache, as an
// app that keeps values in its own memory, driven by tracking_test.go one
// request at a time: a JSON object per line on stdin, the reply a JSON
// object per line on stdout.
//
//   {"op": "get", "key": k}  ->  {"value": v or null, "hit": served from the app's memory}
//   {"op": "ping"}           ->  {} (one round trip: the pushes sent before it are taken in)
//
// A failed request replies {"error": "..."}. The first line is {"ready": true}.
// REDIS_URL is the server.
"use strict";

const readline = require("node:readline");
const { createClient } = require("redis");

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function main() {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error("REDIS_URL is not set (redis://127.0.0.1:PORT/0)");
  // ttl 0 and maxEntries 0: no bound, so a value leaves the cache only
  // when the server invalidates it.
  const client = createClient({ url, RESP: 3, clientSideCache: { ttl: 0, maxEntries: 0 } });
  client.on("error", (e) => process.stderr.write(`node-redis: ${e}\n`));
  await client.connect();
  const cache = client.clientSideCache;
  out({ ready: true });

  for await (const line of readline.createInterface({ input: process.stdin })) {
    let req;
    try {
      req = JSON.parse(line);
      switch (req.op) {
        case "get": {
          const before = cache.stats().hitCount;
          const value = await client.get(req.key);
          out({ value, hit: cache.stats().hitCount > before });
          break;
        }
        case "ping":
          await client.ping();
          out({});
          break;
        default:
          out({ error: `unknown op ${JSON.stringify(req.op)}` });
      }
    } catch (e) {
      out({ error: `${line}: ${e}` });
    }
  }
  client.destroy();
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
