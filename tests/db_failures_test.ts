/**
 * Database failures, black-box over HTTP: PostgreSQL stopped or frozen
 * (every request answered 503 with `Retry-After` while it is, then
 * recovery without a restart; a slow query is not cut short), SQLite full
 * (507, health "full", recovery), a full disk for uploads (507, nothing
 * left behind), and owner-only database files.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { hasPostgres, type PgCluster, startOwnPostgres } from "./_pg.ts";
import {
  DATABASES,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { pause, poll, within } from "./_wait.ts";

const PUBLIC = { mode: "public", expr: "" };
const PG = DATABASES.includes("postgres") && hasPostgres();
/** How long an answer may take before it counts as a hang (no speed claim). */
const DEADLINE = 20_000;

/** Creates a public `posts` entity (title, optional file) and one record. */
async function withPosts(s: TestServer): Promise<string> {
  const token = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "posts",
      type: "base",
      fields: [
        { name: "title", type: "string" },
        { name: "doc", type: "file" },
      ],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
    },
  });
  assert.equal(r.status, 201, r.text);
  const rec = await s.request("POST", "/api/v1/entities/posts", {
    body: { title: "first" },
  });
  assert.equal(rec.status, 201, rec.text);
  return String(rec.data.id);
}

/** A list under a filter (a parameter: planned for its value on PostgreSQL). */
const FILTERED = `/api/v1/entities/posts?filter=${
  encodeURIComponent('title == "first"')
}`;

/** The requests every outage must answer quickly. */
function outageCalls(s: TestServer, id: string) {
  return {
    get: () => s.request("GET", `/api/v1/entities/posts/${id}`),
    list: () => s.request("GET", "/api/v1/entities/posts"),
    // On PostgreSQL a filtered list runs on the lane's twin connection
    // (lib/db/postgres.ts `queryCustomPlan`).
    filtered: () => s.request("GET", FILTERED),
    post: () =>
      s.request("POST", "/api/v1/entities/posts", { body: { title: "x" } }),
    login: () =>
      s.request("POST", "/api/v1/sys/admins/login", {
        body: { identity: "admin@example.com", password: s.adminPassword },
      }),
    health: () => s.request("GET", "/api/v1/health"),
    schema: async () =>
      s.request("POST", "/api/v1/schemas", {
        token: await s.adminToken(),
        body: { name: "later", type: "base", fields: [] },
      }),
  };
}

/**
 * Asserts a 503 with Retry-After, without internals, answered while the
 * database is stopped or frozen: that it answers at all is the proof it
 * does not wait for the database (a frozen cluster never answers; the
 * deadline only turns a hang into a failure, it is no claim about speed:
 * timings belong to `deno task bench`). Health may still answer from the
 * database's last answer for a second (lib/db/postgres.ts `ANSWER_FRESH_MS`):
 * it is asked until it tells.
 */
async function unavailable(name: string, call: () => Promise<Reply>) {
  if (name === "health") {
    const first = call;
    call = () =>
      poll("health to tell the database is down", async () => {
        const r = await within("health", DEADLINE, first());
        return r.status === 503 && r;
      }, { deadline: DEADLINE, every: 100 });
  }
  // A request that hangs fails here (and is released when the test thaws or
  // restarts the database) instead of hanging the test.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    call(),
    new Promise<undefined>((ok) =>
      timer = setTimeout(() => ok(undefined), DEADLINE)
    ),
  ]);
  clearTimeout(timer);
  assert.ok(r, `${name}: no answer within ${DEADLINE} ms`);
  assert.equal(r.status, 503, `${name}: ${r.text}`);
  assert.equal(r.body?.status, 503, `${name}: envelope status`);
  assert.ok(Number(r.headers.get("retry-after")) >= 1, `${name}: Retry-After`);
  assert.doesNotMatch(
    r.error,
    /ECONN|CONNECT_TIMEOUT|127\.0\.0\.1|postgres:\/\//i,
  );
  if (name === "health") {
    assert.equal(r.data.database, "unavailable");
    assert.equal(r.data.status, "down");
  }
}

/**
 * The pool's breaker is open (lib/db/pg_breaker.ts; on PostgreSQL `stateNow`
 * says "unavailable" only then): every statement is refused before it tries
 * the database, so no request waits for a connection, a reconnect or its
 * backoff.
 */
function assertRefusedAtOnce(s: TestServer, name: string): void {
  assert.equal(s.app.storage.stateNow?.(), "unavailable", `${name}: breaker`);
}

/** Waits (up to 15 s) until the record can be read again. */
async function recovered(s: TestServer, id: string): Promise<void> {
  let r: Reply | undefined;
  await poll("the record to be readable again", async () => {
    r = await s.request("GET", `/api/v1/entities/posts/${id}`);
    return r.status === 200;
  }, { deadline: 15_000, every: 200 }).catch(() => {/* asserted below */});
  assert.equal(r?.status, 200, `record readable again: ${r?.text}`);
  const post = await s.request("POST", "/api/v1/entities/posts", {
    body: { title: "after" },
  });
  assert.equal(post.status, 201, post.text);
  const list = await s.request("GET", "/api/v1/entities/posts");
  assert.equal(list.status, 200, list.text);
  const filtered = await s.request("GET", FILTERED);
  assert.equal(filtered.status, 200, filtered.text);
  assert.equal(filtered.data.items[0].title, "first");
  const health = await s.request("GET", "/api/v1/health");
  assert.equal(health.status, 200, health.text);
  assert.equal(health.data.database, "ok");
}

let own: Promise<PgCluster> | undefined;

/**
 * A server on a cluster of this file's own (started once, shared by the
 * outage tests one after the other), so stopping it disturbs no other test.
 */
async function ownServer(): Promise<{ pg: PgCluster; s: TestServer }> {
  const pg = await (own ??= startOwnPostgres());
  const s = await startServer("postgres", {
    connection: await pg.createDatabase(),
  });
  return { pg, s };
}

Deno.test({
  name: "postgres stopped: 503 + Retry-After, recovery without restart",
  ignore: !PG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { pg, s } = await ownServer();
    let down = false;
    try {
      const id = await withPosts(s);
      await pg.stop();
      down = true;
      const calls = outageCalls(s, id);
      for (const [name, call] of Object.entries(calls)) {
        await unavailable(name, call);
      }
      // Several seconds into the outage the breaker is open: each request
      // is refused at once, none waits for a reconnect (or its backoff).
      await pause(4000);
      for (const [name, call] of Object.entries(calls)) {
        assertRefusedAtOnce(s, name);
        await unavailable(name, call);
      }
      await pg.restart();
      down = false;
      await recovered(s, id);
    } finally {
      // The next test on the cluster finds it running.
      if (down) await pg.restart().catch(() => {});
      await s.close();
    }
  },
});

Deno.test({
  name: "postgres frozen (SIGSTOP): 503 + Retry-After while frozen, recovery",
  ignore: !PG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { pg, s } = await ownServer();
    try {
      const id = await withPosts(s);
      const pids = await pg.pids();
      assert.ok(pids.length >= 2, `postmaster and backends: ${pids}`);
      for (const pid of pids) Deno.kill(pid, "SIGSTOP");
      try {
        const calls = outageCalls(s, id);
        // All at once (the first ones hang on live connections), then each alone.
        await Promise.all(
          Object.entries(calls).map(([name, call]) => unavailable(name, call)),
        );
        // By now the breaker is open: each is refused at once.
        for (const [name, call] of Object.entries(calls)) {
          assertRefusedAtOnce(s, name);
          await unavailable(name, call);
        }
      } finally {
        for (const pid of pids) Deno.kill(pid, "SIGCONT");
      }
      await recovered(s, id);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "postgres: a slow query is not cut short, and requests go on meanwhile",
  ignore: !PG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = await startServer("postgres");
    try {
      const id = await withPosts(s);
      // Longer than a stall (750 ms) and a probe: the breaker looks at it.
      const slow = s.app.storage.query("SELECT pg_sleep(2) AS slept");
      await pause(1000);
      for (let i = 0; i < 5; i++) {
        const r = await s.request("GET", `/api/v1/entities/posts/${id}`);
        assert.equal(r.status, 200, r.text);
        const h = await s.request("GET", "/api/v1/health");
        assert.equal(h.status, 200, h.text);
      }
      assert.equal((await slow).length, 1, "the slow query finished");
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "sqlite full (max_page_count): 507, health full, recovery",
  ignore: !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = await startServer("sqlite");
    try {
      const id = await withPosts(s);
      const [{ n }] = await s.app.storage.query(
        "SELECT page_count AS n FROM pragma_page_count()",
      );
      await s.app.storage.exec(`PRAGMA max_page_count = ${Number(n) + 4}`);
      const big = "x".repeat(3000);
      let full: Reply | undefined;
      for (let i = 0; i < 50 && !full; i++) {
        const r = await s.request("POST", "/api/v1/entities/posts", {
          body: { title: big },
        });
        if (r.status !== 201) full = r;
      }
      assert.ok(full, "the size limit was reached");
      assert.equal(full.status, 507, full.text);
      assert.match(full.error, /^Cannot save: .*disk is full/);
      // Writes that commit in one group fail alike (none is a 500).
      const burst = await Promise.all(
        Array.from(
          { length: 10 },
          () =>
            s.request("POST", "/api/v1/entities/posts", {
              body: { title: big },
            }),
        ),
      );
      for (const r of burst) assert.equal(r.status, 507, r.text);
      const patch = await s.request("PATCH", `/api/v1/entities/posts/${id}`, {
        body: { title: big + big },
      });
      assert.equal(patch.status, 507, patch.text);
      // Reads still work; health tells.
      const got = await s.request("GET", `/api/v1/entities/posts/${id}`);
      assert.equal(got.status, 200);
      const h = await s.request("GET", "/api/v1/health");
      assert.equal(h.status, 503, h.text);
      assert.equal(h.data.database, "full");
      assert.equal(h.data.status, "degraded");
      // Space again: the next write succeeds and health is ok.
      await s.app.storage.exec("PRAGMA max_page_count = 1073741823");
      const ok = await s.request("POST", "/api/v1/entities/posts", {
        body: { title: big },
      });
      assert.equal(ok.status, 201, ok.text);
      const h2 = await s.request("GET", "/api/v1/health");
      assert.equal(h2.status, 200, h2.text);
      assert.equal(h2.data.database, "ok");
    } finally {
      await s.close();
    }
  },
});

/** Mounts a tiny tmpfs (root only); undefined with the reason when it cannot. */
async function tinyDisk(): Promise<
  { dir: string; drop: () => Promise<void> } | string
> {
  if (Deno.uid() !== 0) return "not root";
  const dir = await Deno.makeTempDir({ prefix: "mb_tiny_" });
  const out = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", "size=3m", "tmpfs", dir],
    stderr: "piped",
  }).output();
  if (!out.success) {
    await Deno.remove(dir);
    return `mount failed: ${new TextDecoder().decode(out.stderr).trim()}`;
  }
  return {
    dir,
    drop: async () => {
      await new Deno.Command("umount", { args: ["-l", dir] }).output();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** The names of the files under `dir` (none when it does not exist). */
function filesIn(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (e.isDirectory) out.push(...filesIn(join(dir, e.name)));
      else out.push(e.name);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out;
}

/** Fills the disk of `dir` with a file (removed to free the space again). */
async function fill(dir: string): Promise<string> {
  const path = join(dir, "filler");
  const f = await Deno.open(path, { write: true, create: true });
  const chunk = new Uint8Array(64 * 1024);
  try {
    while (true) await f.write(chunk);
  } catch {
    /* full */
  } finally {
    f.close();
  }
  return path;
}

forEachDb(
  "full disk: uploads and writes 507, nothing half-written, recovery",
  async (t, db) => {
    const disk = await tinyDisk();
    if (typeof disk === "string") {
      console.warn(`skipped (a tmpfs needs root and mount): ${disk}`);
      return;
    }
    const s = await startServer(db, { dataDir: join(disk.dir, "data") });
    try {
      const id = await withPosts(s);
      const filler = await fill(disk.dir);
      await t.step("an upload answers 507 and leaves no file", async () => {
        const form = new FormData();
        form.set("title", "with a file");
        form.set(
          "doc",
          new File([new Uint8Array(512 * 1024).fill(65)], "a.txt"),
        );
        const res = await fetch(`${s.url}/api/v1/entities/posts`, {
          method: "POST",
          body: form,
        });
        const body = await res.json();
        assert.equal(res.status, 507, JSON.stringify(body));
        assert.match(body.error, /disk is full/);
        assert.deepEqual(filesIn(join(disk.dir, "data", "files")), []);
      });
      if (db === "sqlite") {
        await t.step("record writes answer 507, health says full", async () => {
          let r: Reply | undefined;
          for (let i = 0; i < 40; i++) {
            r = await s.request("POST", "/api/v1/entities/posts", {
              body: { title: "y".repeat(20_000) },
            });
            if (r.status !== 201) break;
          }
          assert.equal(r?.status, 507, r?.text);
          const h = await s.request("GET", "/api/v1/health");
          assert.equal(h.data.database, "full", h.text);
        });
      }
      await Deno.remove(filler);
      await t.step("space freed: writes succeed, health ok", async () => {
        const r = await s.request("PATCH", `/api/v1/entities/posts/${id}`, {
          body: { title: "again" },
        });
        assert.equal(r.status, 200, r.text);
        const h = await s.request("GET", "/api/v1/health");
        assert.equal(h.status, 200, h.text);
      });
    } finally {
      await s.close();
      await disk.drop();
    }
  },
);

Deno.test({
  name:
    "sqlite files are owner-only: data dir 0700, databases and -wal/-shm 0600",
  ignore: !DATABASES.includes("sqlite") || Deno.build.os === "windows",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "mb_modes_" });
    const dataDir = join(root, "new", "data");
    const s = await startServer("sqlite", { dataDir });
    try {
      await withPosts(s);
      assert.equal(Deno.statSync(dataDir).mode! & 0o777, 0o700, "data dir");
      const names = [...Deno.readDirSync(dataDir)].map((e) => e.name)
        .filter((n) => /\.db(-wal|-shm)?$/.test(n)).sort();
      for (
        const n of [
          "logs.db",
          "moonbase.db",
          "moonbase.db-shm",
          "moonbase.db-wal",
        ]
      ) {
        assert.ok(names.includes(n), `${n} exists: ${names}`);
      }
      for (const n of names) {
        assert.equal(Deno.statSync(join(dataDir, n)).mode! & 0o777, 0o600, n);
      }
    } finally {
      await s.close();
    }
    // Files an older version left world-readable are narrowed at start.
    for (const n of ["moonbase.db", "logs.db"]) {
      Deno.chmodSync(join(dataDir, n), 0o644);
    }
    const again = await startServer("sqlite", { dataDir });
    try {
      for (const n of ["moonbase.db", "logs.db"]) {
        assert.equal(Deno.statSync(join(dataDir, n)).mode! & 0o777, 0o600, n);
      }
    } finally {
      await again.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
