/**
 * Two Moonbase apps in one process keep their own state: list cursors
 * (sealed with each app's secret), first-admin setup (token and queue) and
 * request-body time limits (each app's config, swept by its own server).
 * Each case stands alone with its own pair of apps.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import { closeAll, connect, enc, portOf, readResponse } from "./_tcp.ts";
import { pause, within } from "./_wait.ts";

const SECRET_A = "two-apps-secret-A-0123456789-abcdefghij";
const SECRET_B = "two-apps-secret-B-0123456789-abcdefghij";

/**
 * Two apps with different secrets on the same data (the same entity ids):
 * SQLite copies of one seeded database, or one PostgreSQL database.
 */
async function twoOnSameData(
  db: "sqlite" | "postgres",
  seed: (s: TestServer) => Promise<void>,
): Promise<[TestServer, TestServer, () => Promise<void>]> {
  if (db === "postgres") {
    const connection = await (await startPostgres()).createDatabase();
    const a = await startServer(db, { connection, jwtSecret: SECRET_A });
    await seed(a);
    const b = await startServer(db, { connection, jwtSecret: SECRET_B });
    return [a, b, async () => {
      await a.close();
      await b.close();
    }];
  }
  const seedDir = await Deno.makeTempDir({ prefix: "mb_two_" });
  const seeder = await startServer(db, { dataDir: seedDir });
  await seed(seeder);
  await seeder.close();
  const dirs = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  for (const dir of dirs) {
    for await (const e of Deno.readDir(seedDir)) {
      if (e.isFile && e.name.startsWith("moonbase.db")) {
        await Deno.copyFile(join(seedDir, e.name), join(dir, e.name));
      }
    }
  }
  const a = await startServer(db, { dataDir: dirs[0], jwtSecret: SECRET_A });
  const b = await startServer(db, { dataDir: dirs[1], jwtSecret: SECRET_B });
  return [a, b, async () => {
    await a.close();
    await b.close();
    for (const d of [seedDir, ...dirs]) {
      await Deno.remove(d, { recursive: true }).catch(() => {});
    }
  }];
}

forEachDb("two apps: a list cursor of one is refused by the other", async (
  _t,
  db,
) => {
  const [a, b, done] = await twoOnSameData(db, async (s) => {
    const token = await s.adminToken();
    const r = await s.request("POST", "/api/v1/schemas", {
      token,
      body: {
        name: "notes",
        type: "base",
        fields: [{ name: "title", type: "string" }],
      },
    });
    assert.equal(r.status, 201, r.text);
    for (const title of ["one", "two", "three"]) {
      const c = await s.request("POST", "/api/v1/entities/notes", {
        token,
        body: { title },
      });
      assert.equal(c.status, 201, c.text);
    }
  });
  try {
    const [ta, tb] = [await a.adminToken(), await b.adminToken()];
    const path = "/api/v1/entities/notes?sort=title&limit=1";
    const pa = await a.request("GET", path, { token: ta });
    const pb = await b.request("GET", path, { token: tb });
    assert.equal(pa.status, 200, pa.text);
    assert.deepEqual(pa.data.items, pb.data.items, "the same data");
    const ca = encodeURIComponent(pa.data.cursor);
    const cb = encodeURIComponent(pb.data.cursor);
    assert.notEqual(ca, cb, "each app seals with its own key");

    const onA = await a.request("GET", `${path}&after=${ca}`, { token: ta });
    assert.equal(onA.status, 200, onA.text);
    assert.equal(onA.data.items[0].title, "three");
    const onB = await b.request("GET", `${path}&after=${ca}`, { token: tb });
    assert.equal(onB.status, 400, onB.text);
    assert.match(onB.error, /^Cannot use cursor: /);

    const own = await b.request("GET", `${path}&after=${cb}`, { token: tb });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.data.items[0].title, "three");
    const back = await a.request("GET", `${path}&after=${cb}`, { token: ta });
    assert.equal(back.status, 400, back.text);
  } finally {
    await done();
  }
});

/** Opens a setup request whose body never completes (the app waits for it). */
async function stalledSetup(s: TestServer, token: string) {
  const c = await connect(portOf(s));
  await c.write(enc.encode(
    "POST /api/v1/sys/admins/setup HTTP/1.1\r\nHost: x\r\n" +
      `Authorization: Bearer ${token}\r\n` +
      "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n" +
      '{"email":',
  ));
  return c;
}

const setupBody = (email: string) => ({ email, password: "setup-password-1" });

forEachDb("two apps: each has its own setup token and setup queue", async (
  _t,
  db,
) => {
  const a = await startServer(db);
  // B ends the stall below after 3 s: past the 2.5 s that A's setup may take.
  const b = await startServer(db, { bodyTimeout: 3 });
  const conns: Deno.Conn[] = [];
  try {
    const tokenA = a.app.setupToken, tokenB = b.app.setupToken;
    assert.ok(tokenA && tokenB && tokenA !== tokenB, "two tokens");
    for (const s of [a, b]) {
      const r = await s.request("GET", "/api/v1/sys/admins/setup");
      assert.deepEqual(r.data, { required: true });
    }
    // Neither token opens the other app.
    let r = await b.request("POST", "/api/v1/sys/admins/setup", {
      token: tokenA,
      body: setupBody("a@example.com"),
    });
    assert.equal(r.status, 401, r.text);

    // B's setup waits for a body that does not come: A's setup goes on.
    conns.push(await stalledSetup(b, tokenB));
    await pause(200);
    r = await within(
      "A's setup while B's is stalled",
      2500,
      a.request("POST", "/api/v1/sys/admins/setup", {
        token: tokenA,
        body: setupBody("a@example.com"),
      }),
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(a.app.setupToken, undefined, "A's token is used up");

    // B is untouched: it still requires its own token and accepts it.
    assert.equal(b.app.setupToken, tokenB);
    r = await b.request("GET", "/api/v1/sys/admins/setup");
    assert.deepEqual(r.data, { required: true });
    r = await b.request("POST", "/api/v1/sys/admins/setup", {
      token: tokenA,
      body: setupBody("b@example.com"),
    });
    assert.equal(r.status, 401, r.text);
    // B's stalled setup ends with its body timeout; then B's own goes on.
    assert.match(await readResponse(conns[0], 8000), /^HTTP\/1\.1 408/);
    r = await b.request("POST", "/api/v1/sys/admins/setup", {
      token: tokenB,
      body: setupBody("b@example.com"),
    });
    assert.equal(r.status, 201, r.text);
    r = await a.request("POST", "/api/v1/sys/admins/setup", {
      token: tokenA,
      body: setupBody("again@example.com"),
    });
    assert.equal(r.status, 403, r.text);
  } finally {
    closeAll(conns);
    await a.close();
    await b.close();
  }
});

/** Sends a login body in two parts `pauseMs` apart; returns the status line. */
async function slowLogin(s: TestServer, pauseMs: number): Promise<string> {
  const body = '{"identity":"nobody@example.com","password":"wrong-password"}';
  const c = await connect(portOf(s));
  try {
    await c.write(enc.encode(
      "POST /api/v1/sys/admins/login HTTP/1.1\r\nHost: x\r\n" +
        "Content-Type: application/json\r\nConnection: close\r\n" +
        `Content-Length: ${body.length}\r\n\r\n` + body.slice(0, 12),
    ));
    await pause(pauseMs);
    await c.write(enc.encode(body.slice(12))).catch(() => 0);
    const text = await readResponse(c, 5000);
    return text.slice(0, text.indexOf("\r\n"));
  } finally {
    closeAll([c]);
  }
}

forEachDb("two apps: each keeps its own body time limits", async (_t, db) => {
  // B starts first: with process-wide limits, the last app started (A, half
  // a second) would set them for both.
  const b = await startServer(db, { bodyTimeout: 10 });
  const a = await startServer(db, { bodyTimeout: 0.5 });
  try {
    const [onA, onB] = await Promise.all([
      slowLogin(a, 1500),
      slowLogin(b, 1500),
    ]);
    assert.match(onA, /^HTTP\/1\.1 408/, "A's half-second limit");
    assert.match(onB, /^HTTP\/1\.1 40[01]/, "B's 10 s limit lets it arrive");
    assert.equal(a.app.bodies.size, 0, "A's watch is gone");
    assert.equal(b.app.bodies.size, 0, "B's watch is gone");
  } finally {
    await a.close();
    await b.close();
  }
});
