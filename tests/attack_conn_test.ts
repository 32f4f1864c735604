/**
 * Attacks on the connection layer (issue 13, item 2) with raw TCP clients:
 * clients that never read their responses ("slow read") must not hold
 * connections for ever and lock everyone out at the cap, and a connection
 * that merely fills the cap must be served, not reset. No database is
 * involved: SQLite only.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startServer } from "./_server.ts";
import {
  closeAll,
  connect,
  dec,
  enc,
  healthWithin,
  portOf,
  readResponse,
  sleep,
} from "./_tcp.ts";

Deno.test({
  name:
    "attack conn: clients that never read their responses cannot hold the cap [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const publicDir = await Deno.makeTempDir({ prefix: "mb_pub_" });
    // Far larger than the socket buffers: its response blocks on the write.
    const big = new Uint8Array(32 * 1024 * 1024);
    await Deno.writeFile(join(publicDir, "big.bin"), big);
    const s = await startServer("sqlite", {
      publicDir,
      headerTimeout: 1,
      idleTimeout: 1,
      bodyTimeout: 1,
      maxConnections: 4,
    });
    const port = portOf(s);
    const attackers: Deno.TcpConn[] = [];
    try {
      // Each downloads a big file and never reads it.
      for (let i = 0; i < 4; i++) {
        const c = await connect(port);
        attackers.push(c);
        await c.write(enc.encode("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"));
      }
      await sleep(1500); // every attacker is now blocked on its writes
      assert.ok(
        await healthWithin(port, 10_000),
        "health locked out by clients that never read",
      );
    } finally {
      closeAll(attackers);
      await s.close();
      await Deno.remove(publicDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "attack conn: a client that reads a download slowly gets all of it [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const publicDir = await Deno.makeTempDir({ prefix: "mb_pub_" });
    const size = 12 * 1024 * 1024;
    await Deno.writeFile(join(publicDir, "big.bin"), new Uint8Array(size));
    const s = await startServer("sqlite", { publicDir, idleTimeout: 2 });
    const c = await connect(portOf(s));
    try {
      await c.write(enc.encode("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"));
      // About 3 MB/s: slower than the socket buffers fill, never stalled.
      let got = 0;
      let head = -1;
      const buf = new Uint8Array(1024 * 1024);
      while (head < 0 || got < head + size) {
        const n = await c.read(buf);
        if (n === null) break;
        if (head < 0) {
          const at = dec.decode(buf.subarray(0, n)).indexOf("\r\n\r\n");
          if (at >= 0) head = at + 4;
        }
        got += n;
        await sleep(Math.floor(300 * n / buf.length));
      }
      assert.ok(head > 0, "no response head");
      assert.equal(got - head, size, "the download was cut");
    } finally {
      try {
        c.close();
      } catch { /* closed */ }
      await s.close();
      await Deno.remove(publicDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "attack conn: the connection that reaches the cap is served, not reset [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = await startServer("sqlite", {
      headerTimeout: 30,
      idleTimeout: 30,
      maxConnections: 3,
    });
    const port = portOf(s);
    const conns: Deno.TcpConn[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const c = await connect(port);
        conns.push(c);
        await c.write(
          enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
      }
      const answers = await Promise.all(
        conns.map((c) => readResponse(c, 5000)),
      );
      answers.forEach((text, i) =>
        assert.match(text, /^HTTP\/1\.1 200/, `connection ${i} got no answer`)
      );
    } finally {
      closeAll(conns);
      await s.close();
    }
  },
});

Deno.test({
  name:
    "attack conn: bodies trickled into every slot no longer lock the cap (minimum body rate) [sqlite]",
  // Slow POST: a body sending a byte just inside bodyTimeout used to hold its
  // connection until bodyDeadline, and cap-many of them locked everyone out.
  // The minimum body rate (bodyMinRate) ends them once bodyTimeout has passed.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = await startServer("sqlite", {
      bodyTimeout: 2,
      bodyDeadline: 120,
      maxConnections: 4,
    });
    const port = portOf(s);
    const attackers: Deno.TcpConn[] = [];
    let trickling = true;
    try {
      for (let i = 0; i < 4; i++) {
        const c = await connect(port);
        attackers.push(c);
        await c.write(enc.encode(
          "POST /api/v1/sys/admins/login HTTP/1.1\r\nHost: x\r\n" +
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
        ));
      }
      (async () => {
        while (trickling) {
          for (const c of attackers) {
            await c.write(enc.encode(" ")).catch(() => {});
          }
          await sleep(1000);
        }
      })();
      assert.ok(
        await healthWithin(port, 10_000),
        "health locked out by trickled bodies",
      );
    } finally {
      trickling = false;
      closeAll(attackers);
      await s.close();
    }
  },
});
