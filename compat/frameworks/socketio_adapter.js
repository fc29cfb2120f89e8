// Pub/sub: Socket.IO 4.8 servers joined by @socket.io/redis-adapter 8.3 on
// node-redis 5, configured as the adapter's README says (a publishing
// client and a subscribing duplicate per server). Two Socket.IO servers in
// this process, three socket.io-client clients (two on the first server,
// one on the second), run once with each of the package's adapters:
//
//   - createAdapter: PSUBSCRIBE "socket.io#/#*" and PUBLISH, SUBSCRIBE to
//     request and response channels, PUBSUB NUMSUB to count the servers;
//   - createShardedAdapter: Redis 7's sharded pub/sub, SSUBSCRIBE and
//     SPUBLISH on a channel per namespace and per room, PUBSUB SHARDNUMSUB.
//
// Asserted: a broadcast from either server reaches every client once, in
// the order sent; a room broadcast reaches the room's members only; a
// server sees the other's sockets (fetchSockets, a request answered over
// pub/sub), joins them to rooms and disconnects them; serverSideEmit
// reaches the other server and its acknowledgement comes back.
//
// Channels are not keys: KEY_PREFIX plays no part.
"use strict";

const http = require("node:http");
const { Server } = require("socket.io");
const { io: connect } = require("socket.io-client");
const { createAdapter, createShardedAdapter } = require("@socket.io/redis-adapter");
const { createClient } = require("redis");
const { env, Checks, sleep, describe } = require("./checks");

const { url } = env();
const c = new Checks("socket.io");
// wait bounds one expected event.
const wait = 5000;

// An error the adapter or a client raises outside a step (a refused
// SUBSCRIBE, say) fails the step that runs when it comes; the same error
// again (each PUBLISH refused) is not repeated.
const seen = new Set();
process.on("unhandledRejection", (e) => {
  const what = describe(e).replace(/, with args beginning with:.*/s, "");
  if (!seen.has(what)) c.fail(`unhandled rejection: ${what}`);
  seen.add(what);
});

// stepBound bounds one step: a request the adapter never answers fails it.
const stepBound = 15_000;

function bounded(fn) {
  return () => {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no end within ${stepBound} ms`)), stepBound);
    });
    return Promise.race([fn(), timeout]).finally(() => clearTimeout(timer));
  };
}

// once resolves with the next event ev of emitter, or rejects after ms.
function once(emitter, ev, ms = wait) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${ev}" within ${ms} ms`)), ms);
    emitter.once(ev, (...args) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

// collect records every event ev a client receives.
function collect(client, ev) {
  const got = [];
  client.on(ev, (x) => got.push(x));
  return got;
}

async function untilAsync(ms, ok) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

async function until(ms, ok) {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

// server starts a Socket.IO server on a free port with the adapter make
// returns for its two Redis clients.
async function server(name, make, closers) {
  const pub = createClient({ url });
  const sub = pub.duplicate();
  for (const r of [pub, sub]) r.on("error", (e) => c.fail(`${name} redis client error: ${describe(e)}`));
  await Promise.all([pub.connect(), sub.connect()]);
  closers.push(() => Promise.all([pub.close(), sub.close()]));
  const httpServer = http.createServer();
  const io = new Server(httpServer, { adapter: make(pub, sub) });
  io.of("/").adapter.on("error", (e) => c.fail(`${name} adapter error: ${describe(e)}`));
  // A client names the room to join in its handshake.
  io.on("connection", (socket) => {
    const room = socket.handshake.query.room;
    if (room) socket.join(room);
  });
  await new Promise((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => io.close(() => resolve())));
  return { io, port: httpServer.address().port };
}

async function client(port, query, closers) {
  const s = connect(`http://127.0.0.1:${port}`, { transports: ["websocket"], reconnection: false, query });
  closers.push(() => s.disconnect());
  await once(s, "connect");
  return s;
}

async function scenario(name, make) {
  const closers = [];
  const step = (what, fn) => c.step(`${name}: ${what}`, bounded(fn));
  let s1, s2, a, b, d;
  try {
    await step("servers and clients start", async () => {
      s1 = await server("server 1", make, closers);
      s2 = await server("server 2", make, closers);
      a = await client(s1.port, { room: "blue" }, closers);
      b = await client(s1.port, {}, closers);
      d = await client(s2.port, { room: "blue" }, closers);
    });
    if (!d) {
      c.fail("the other steps not run: the servers or clients did not start");
      return;
    }

    let counted = false;
    await step("each server counts two servers", async () => {
      // An adapter subscribes when it is made, without waiting: the count
      // (PUBSUB NUMSUB or SHARDNUMSUB of its channel) says when both are.
      let n;
      const ok = await untilAsync(wait, async () => (n = await s1.io.of("/").adapter.serverCount()) === 2);
      c.ok("serverCount", ok, `${n}`);
      c.eq("from the other", await s2.io.of("/").adapter.serverCount(), 2);
      counted = ok;
    });
    if (!counted) {
      // Every step below needs both servers subscribed.
      c.fail("the other steps not run: the servers are not both subscribed");
      return;
    }

    await step("a broadcast reaches every client once, in each server's order", async () => {
      const got = [a, b, d].map((x) => collect(x, "news"));
      // Odd numbers from server 2, even from server 1, interleaved: a
      // client sees each server's in the order sent, the two servers'
      // interleaved as they came.
      for (let i = 1; i <= 20; i++) (i % 2 ? s2 : s1).io.emit("news", i);
      const done = await until(wait, () => got.every((g) => g.length >= 20));
      c.ok("all arrived", done, `got ${got.map((g) => g.length)} of 20`);
      await sleep(100); // and no more
      const odd = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19];
      const even = odd.map((x) => x + 1);
      got.forEach((g, i) => {
        c.eq(`client ${i + 1}: server 2's`, g.filter((x) => x % 2), odd);
        c.eq(`client ${i + 1}: server 1's`, g.filter((x) => !(x % 2)), even);
        c.eq(`client ${i + 1}: nothing else`, g.length, 20);
      });
    });

    await step("a room broadcast reaches its members only", async () => {
      const got = [a, b, d].map((x) => collect(x, "room"));
      const ends = [a, b, d].map((x) => once(x, "end"));
      s2.io.to("blue").emit("room", "blue only");
      // Sent after it from the same server: when it has arrived, so has
      // the room broadcast, wherever it was going.
      s2.io.emit("end");
      await Promise.all(ends);
      c.eq("members and others", got, [["blue only"], [], ["blue only"]]);
    });

    await step("fetchSockets sees the other server's sockets", async () => {
      const all = await s1.io.fetchSockets();
      c.eq("every socket", all.map((s) => s.id).sort(), [a.id, b.id, d.id].sort());
      const blue = await s2.io.in("blue").fetchSockets();
      c.eq("the room's", blue.map((s) => s.id).sort(), [a.id, d.id].sort());
    });

    await step("socketsJoin and disconnectSockets across servers", async () => {
      await s2.io.in(b.id).socketsJoin("green");
      const green = await until(wait, () => s1.io.of("/").adapter.rooms.get("green")?.has(b.id));
      c.ok("b joined green on server 1", green, "not in the room");
      const bye = once(b, "disconnect");
      s2.io.in("green").disconnectSockets();
      const [reason] = await bye;
      c.eq("b disconnected by the server", reason, "io server disconnect");
      c.ok("a still connected", a.connected, "disconnected");
    });

    await step("serverSideEmit with an acknowledgement", async () => {
      s2.io.on("ping-servers", (n, ack) => ack(`server 2 got ${n}`));
      s1.io.on("ping-servers", () => c.fail("server 1 got its own serverSideEmit"));
      // Unanswered, it rejects after the adapter's requestsTimeout (5 s).
      const replies = await s1.io.serverSideEmitWithAck("ping-servers", 7);
      c.eq("replies", replies, ["server 2 got 7"]);
    });
  } finally {
    // Bounded too: closing a client the server refused may never end.
    for (const close of closers.reverse()) await bounded(async () => close())().catch(() => {});
  }
}

async function main() {
  await scenario("adapter", (pub, sub) => createAdapter(pub, sub));
  await scenario("sharded adapter", (pub, sub) => createShardedAdapter(pub, sub));
  c.done();
}

main()
  .catch((e) => {
    console.log(`FAIL socket.io: ${e && e.stack}`);
    process.exitCode = 1;
  })
  // The clients' and servers' timers are stopped; a Redis reconnect
  // timer of a refused client is not ours to wait for.
  .finally(() => setTimeout(() => process.exit(), 100).unref());
