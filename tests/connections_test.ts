/**
 * Connection hardening (issue 13, item 2): header, idle and body timeouts,
 * the connection cap, and an accept loop that survives running out of file
 * descriptors. Raw TCP clients against a real server with small limits; the
 * descriptor case runs the real CLI under `ulimit -n 256`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createApp } from "../mod.ts";
import { forEachDb, startServer, TEST_JWT_SECRET } from "./_server.ts";
import {
  connect,
  enc,
  healthWithin,
  portOf,
  readResponse,
  readUntilClosed,
  sleep,
} from "./_tcp.ts";
import { poll } from "./_wait.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/**
 * Small limits (fractions of a second: the library takes them, the CLI only
 * whole seconds), so a case waits a fraction of a second for a timeout. The
 * idle and body limits leave room for the pauses of the well-behaved clients
 * below (100 and 150 ms).
 */
const SMALL = { headerTimeout: 0.25, idleTimeout: 0.5, bodyTimeout: 0.5 };

Deno.test({
  name: "connections: header and idle timeouts, keep-alive [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const s = await startServer("sqlite", SMALL);
    const port = portOf(s);
    try {
      await t.step("a connection that sends nothing is closed", async () => {
        const r = await readUntilClosed(await connect(port), 4000);
        assert.ok(r.closed, "still open after 4 s");
        assert.equal(r.text, "");
      });

      await t.step("half a request head is closed", async () => {
        const c = await connect(port);
        await c.write(enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n"));
        const r = await readUntilClosed(c, 4000);
        assert.ok(r.closed, "still open after 4 s");
      });

      await t.step("an idle keep-alive connection is closed", async () => {
        const c = await connect(port);
        await c.write(
          enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
        assert.match(await readResponse(c), /^HTTP\/1\.1 200/);
        const r = await readUntilClosed(c, 4000);
        assert.ok(r.closed, "still open 4 s after the response");
      });

      await t.step("half of a second request head is closed", async () => {
        const c = await connect(port);
        await c.write(
          enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
        assert.match(await readResponse(c), /^HTTP\/1\.1 200/);
        await c.write(enc.encode("GET /api/v1/health HTTP/1.1\r\nHo"));
        const r = await readUntilClosed(c, 4000);
        assert.ok(r.closed, "still open after 4 s");
      });

      await t.step("keep-alive reuse works for normal clients", async () => {
        const c = await connect(port);
        try {
          for (let i = 0; i < 3; i++) {
            await c.write(
              enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
            );
            assert.match(await readResponse(c), /^HTTP\/1\.1 200/, `#${i}`);
            await sleep(100); // well within the 0.5 s idle timeout
          }
        } finally {
          c.close();
        }
        for (let i = 0; i < 5; i++) {
          const r = await s.request("GET", "/api/v1/health");
          assert.equal(r.status, 200);
        }
      });

      await t.step("a GET with half a body is closed", async () => {
        const c = await connect(port);
        await c.write(enc.encode(
          "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
        ));
        const r = await readUntilClosed(c, 5000);
        assert.ok(r.closed, "still open after 5 s");
      });
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "connections: the cap closes idle connections to make room [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // A long header timeout: only the cap can close these connections.
    const s = await startServer("sqlite", {
      headerTimeout: 60,
      maxConnections: 20,
    });
    const port = portOf(s);
    const idle: Deno.TcpConn[] = [];
    let closed = 0;
    try {
      for (let i = 0; i < 40; i++) idle.push(await connect(port));
      const watching = idle.map((c) =>
        readUntilClosed(c, 20_000).then((r) => r.closed && closed++)
      );
      const until = Date.now() + 5000;
      while (closed < 20 && Date.now() < until) await sleep(100);
      assert.ok(closed >= 20, `only ${closed} of 40 idle connections closed`);
      // The other idle connections are still held by this client.
      const r = await s.request("GET", "/api/v1/health");
      assert.equal(r.status, 200);
      for (const c of idle) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await Promise.all(watching);
    } finally {
      await s.close();
    }
  },
});

/** Sends a request head and half its body; returns the connection. */
async function halfBody(
  port: number,
  head: string,
  part: string,
): Promise<Deno.TcpConn> {
  const c = await connect(port);
  await c.write(enc.encode(head + part));
  return c;
}

forEachDb(
  "connections: a stalled body gets 408 and is closed",
  async (t, db) => {
    // A minimum body rate of 10 bytes/s: the slow body below (~27 bytes/s)
    // keeps it; the default (500 bytes/s) is covered by attack_conn_test.
    const s = await startServer(db, { ...SMALL, bodyMinRate: 10 });
    const port = portOf(s);
    try {
      await t.step("JSON body", async () => {
        const c = await halfBody(
          port,
          "POST /api/v1/sys/admins/login HTTP/1.1\r\nHost: x\r\n" +
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n",
          '{"identity":',
        );
        const r = await readUntilClosed(c, 5000);
        assert.ok(r.closed, "still open after 5 s");
        assert.match(r.text, /^HTTP\/1\.1 408/);
        const body = JSON.parse(r.text.slice(r.text.indexOf("\r\n\r\n") + 4));
        assert.equal(body.status, 408);
        assert.match(body.error, /^Cannot read body: no data for 0\.5 s/);
      });

      await t.step("multipart upload", async () => {
        const admin = await s.adminToken();
        const created = await s.request("POST", "/api/v1/schemas", {
          token: admin,
          body: {
            name: "docs",
            type: "base",
            fields: [{ name: "f", type: "file" }],
          },
        });
        assert.equal(created.status, 201, created.text);
        const c = await halfBody(
          port,
          "POST /api/v1/entities/docs HTTP/1.1\r\nHost: x\r\n" +
            `Authorization: Bearer ${admin}\r\n` +
            "Content-Type: multipart/form-data; boundary=b\r\n" +
            "Content-Length: 10000\r\n\r\n",
          '--b\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n' +
            "Content-Type: text/plain\r\n\r\nsome bytes",
        );
        const r = await readUntilClosed(c, 5000);
        assert.ok(r.closed, "still open after 5 s");
        assert.match(r.text, /^HTTP\/1\.1 408/);
        const list = await s.request("GET", "/api/v1/entities/docs", {
          token: admin,
        });
        assert.equal(list.data.items.length, 0, "no record from a cut upload");
      });

      await t.step("a slow body that keeps coming is accepted", async () => {
        const payload = JSON.stringify({
          identity: "nobody@example.com",
          password: "wrong-password-123",
        });
        const c = await connect(port);
        await c.write(enc.encode(
          "POST /api/v1/sys/admins/login HTTP/1.1\r\nHost: x\r\n" +
            `Content-Type: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`,
        ));
        // Six pieces 150 ms apart: 0.9 s in all, each pause under the 0.5 s
        // limit.
        const step = Math.ceil(payload.length / 6);
        for (let i = 0; i < payload.length; i += step) {
          await c.write(enc.encode(payload.slice(i, i + step)));
          await sleep(150);
        }
        const res = await readResponse(c);
        c.close();
        assert.match(res, /^HTTP\/1\.1 401/, "read whole, then refused login");
      });
    } finally {
      await s.close();
    }
  },
);

Deno.test({
  name:
    "connections: app.stop closes idle connections at once, in-flight finish",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
    const app = await createApp({
      quiet: true,
      jwtSecret: TEST_JWT_SECRET,
      dataDir,
      idleTimeout: 60,
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    let arrived = false;
    app.route("GET", "/api/slow", async () => {
      arrived = true;
      await gate;
      return new Response("done");
    });
    const server = await app.serve({ port: 0, hostname: "127.0.0.1" });
    const port = server.addr.port;
    try {
      const idle = await connect(port);
      await idle.write(
        enc.encode("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
      );
      assert.match(await readResponse(idle), /^HTTP\/1\.1 200/);
      const slow = fetch(`http://127.0.0.1:${port}/api/slow`).then((r) =>
        r.text()
      );
      await poll("the slow request to arrive", () => arrived);
      const stopping = app.stop(server);
      const r = await readUntilClosed(idle, 2000);
      assert.ok(r.closed, "idle keep-alive connection not closed at once");
      await assert.rejects(connect(port), "new connections refused");
      release();
      assert.equal(await slow, "done", "the request in flight finished");
      await stopping;
    } finally {
      release();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

/** Starts the real CLI under `ulimit -n 256`; resolves with its port. */
async function startLimitedCli(
  dataDir: string,
  extra: string[],
): Promise<{ child: Deno.ChildProcess; port: number; output: () => string }> {
  const deno = Deno.execPath();
  const args = ["run", "-A", "main.ts", "--dataDir", dataDir, "serve"];
  const cmd = [deno, ...args, "--port", "0", "--host", "127.0.0.1", ...extra]
    .map((a) => `'${a}'`).join(" ");
  const child = new Deno.Command("bash", {
    args: ["-c", `ulimit -n 256 && exec ${cmd}`],
    cwd: ROOT,
    env: { MB_JWT_SECRET: TEST_JWT_SECRET, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array<ArrayBuffer>>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      out += chunk;
    }
  };
  pump(child.stdout);
  pump(child.stderr);
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (m) return { child, port: Number(m[1]), output: () => out };
    await sleep(50);
  }
  child.kill("SIGKILL");
  throw new Error(`Cannot start the CLI:\n${out}`);
}

/** True when the process has not exited within `ms`. */
async function aliveAfter(child: Deno.ChildProcess, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    child.status.then(() => false),
    new Promise<boolean>((res) => timer = setTimeout(() => res(true), ms)),
  ]);
  clearTimeout(timer);
  return r;
}

Deno.test({
  name: "connections: under ulimit -n 256, 300 idle connections [sqlite]",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const cases = [
      // The cap cannot help: accept runs out of descriptors (EMFILE).
      ["no usable cap", [
        "--maxConnections",
        "100000",
        "--headerTimeout",
        "60",
      ]],
      // The default cap follows the open-file limit (256 - 64).
      ["default cap", ["--headerTimeout", "60"]],
    ] as const;
    for (const [name, extra] of cases) {
      await t.step(name, async () => {
        const dataDir = await Deno.makeTempDir({ prefix: "mb_test_" });
        const { child, port, output } = await startLimitedCli(dataDir, [
          ...extra,
        ]);
        const idle: Deno.TcpConn[] = [];
        try {
          for (let i = 0; i < 300; i++) {
            idle.push(
              await connect(port).catch((err) => {
                throw new Error(`connection ${i}: ${err}\n${output()}`);
              }),
            );
          }
          // Once the server has met what it must survive (health answered
          // at the default cap; accept failing without one), it is alive.
          if (name === "default cap") {
            assert.ok(
              await healthWithin(port, 5000),
              `no health while idle connections are held:\n${output()}`,
            );
          } else {
            await poll(
              "accept to fail",
              () => /Cannot accept connection/.test(output()),
            ).catch(() => {}); // the assertion below says what is missing
            assert.match(output(), /Cannot accept connection/);
          }
          assert.ok(await aliveAfter(child, 300), `exited:\n${output()}`);
          for (const c of idle) {
            try {
              c.close();
            } catch { /* closed by the server */ }
          }
          assert.ok(await healthWithin(port, 5000), `no health:\n${output()}`);
          assert.ok(await aliveAfter(child, 100), `exited:\n${output()}`);
        } finally {
          for (const c of idle) {
            try {
              c.close();
            } catch { /* closed */ }
          }
          try {
            child.kill("SIGTERM");
          } catch { /* gone */ }
          await child.status;
          await Deno.remove(dataDir, { recursive: true }).catch(() => {});
        }
      });
    }
  },
});
