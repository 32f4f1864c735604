/**
 * `moonbase serve` across restarts and shutdowns, on SQLite and PostgreSQL:
 * what the first run created (admin via the setup link, entity, record, a
 * token) is all there in the second run; SIGTERM lets in-flight requests
 * finish (logins busy hashing, a create whose body is still arriving) and
 * exits 0, SIGINT too.
 *
 * @module
 */

import { assert, assertEquals, DATABASES, startServer } from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import {
  call,
  dataDir,
  expectStatus,
  HOST,
  opts,
  SECRET,
  seedAdmins,
  type Served,
  startCli,
} from "./_cli_fixtures.ts";
import { pause } from "./_wait.ts";

/** The CLI's database options for `db` (a fresh PostgreSQL database). */
async function database(
  db: "sqlite" | "postgres",
): Promise<{ args: string[]; connection?: string }> {
  if (db === "sqlite") return { args: [] };
  const connection = await (await startPostgres()).createDatabase();
  return {
    args: ["--database", "PSQL", "--connection", connection],
    connection,
  };
}

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `cli: restart persistence [${db}]`,
    async fn() {
      const { dir, cleanup } = await dataDir();
      const args = [
        ...(await database(db)).args,
        "--dataDir",
        dir,
        "serve",
        "--port",
        "0",
        "--host",
        HOST,
      ];
      let server: Served | undefined;
      try {
        // First run: admin via the setup link, entity, record.
        server = await startCli(args);
        const setup = /setup\?token=(\S+)/.exec(server.stdout());
        assert(setup, `no setup link:\n${server.stdout()}`);
        let r = await call(server.url, "POST", "/api/v1/sys/admins/setup", {
          token: setup[1],
          body: { email: "boss@example.com", password: "boss-password-1" },
        });
        expectStatus(r, 201, "setup");
        const token = r.data.token;
        r = await call(server.url, "POST", "/api/v1/schemas", {
          token,
          body: {
            name: "notes",
            type: "base",
            fields: [
              { name: "title", type: "string", required: true },
              { name: "n", type: "int" },
            ],
            rules: {
              list: { mode: "public", expr: "" },
              get: { mode: "public", expr: "" },
              add: { mode: "", expr: "" },
              update: { mode: "", expr: "" },
              delete: { mode: "", expr: "" },
            },
          },
        });
        expectStatus(r, 201, "create entity");
        r = await call(server.url, "POST", "/api/v1/entities/notes", {
          token,
          body: { title: "survives restarts", n: 42 },
        });
        expectStatus(r, 201, "create record");
        const recordId = r.data.id;
        let stopped = await server.stop("SIGTERM");
        server = undefined;
        assertEquals(stopped, { code: 0, timedOut: false }, "SIGTERM");

        // Second run: entity, records and token are still there.
        server = await startCli(args);
        assert(
          !server.stdout().includes("setup?token="),
          `no setup link once an admin exists:\n${server.stdout()}`,
        );
        r = await call(server.url, "GET", "/api/v1/schemas/notes", { token });
        expectStatus(r, 200, "entity after restart (old token)");
        assertEquals(r.data.name, "notes");
        r = await call(server.url, "GET", `/api/v1/entities/notes/${recordId}`);
        expectStatus(r, 200, "record after restart");
        assertEquals(r.data.title, "survives restarts");
        assertEquals(r.data.n, 42);
        r = await call(server.url, "GET", "/api/v1/entities/notes?count=true");
        expectStatus(r, 200, "list after restart");
        assertEquals(r.data.total, 1);
        r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
          body: { identity: "boss@example.com", password: "boss-password-1" },
        });
        expectStatus(r, 200, "admin login after restart");
        stopped = await server.stop("SIGINT");
        server = undefined;
        assertEquals(stopped, { code: 0, timedOut: false }, "SIGINT");
      } finally {
        await server?.kill();
        await cleanup();
      }
    },
  });

  Deno.test({
    ...opts,
    name: `cli: SIGTERM lets in-flight logins finish and exits 0 [${db}]`,
    async fn() {
      const { dir, cleanup } = await dataDir();
      const { args: dbOpts, connection } = await database(db);
      let server: Served | undefined;
      try {
        await seedAdmins(
          dir,
          { "boss@example.com": "boss-password-1" },
          connection,
        );
        server = await startCli([
          ...dbOpts,
          "--dataDir",
          dir,
          "serve",
          "--port",
          "0",
          "--host",
          HOST,
        ]);
        const s = server;
        // Three open keep-alive connections first: the logins below go out
        // at once, with no connect to wait for on a loaded machine (CI ran
        // tests in parallel and a connect outlasted the 40 ms below).
        await Promise.all(
          [1, 2, 3].map(() =>
            fetch(`${s.url}/api/v1/health`).then((r) => r.body?.cancel())
          ),
        );
        // Logins spend ~100 ms in scrypt: they are in the handler when the
        // signal comes, and must still be answered.
        const logins = [1, 2, 3].map(() =>
          fetch(`${s.url}/api/v1/sys/admins/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              identity: "boss@example.com",
              password: "boss-password-1",
            }),
          }).then(async (res) => ({
            status: res.status,
            text: await res.text(),
          }))
            .catch((err) => ({ status: 0, text: String(err) }))
        );
        // Time for the requests to reach the server (a loaded machine once
        // took over 40 ms: a login that arrives after the signal gets its 503,
        // rightly); the three scrypts, one per core, are still running.
        await pause(100);
        const stopped = await s.stop("SIGTERM", 10_000);
        server = undefined;
        const results = await Promise.all(logins);
        assertEquals(stopped, { code: 0, timedOut: false }, s.stderr());
        for (const res of results) {
          assertEquals(
            res.status,
            200,
            `in-flight login during shutdown: ${res.text.slice(0, 300)}`,
          );
        }
        assert(
          !s.stderr().split("\n").some((l) => /^\s+at /.test(l)),
          s.stderr(),
        );
        // The port is closed afterwards.
        const after = await fetch(`${s.url}/api/v1/health`).then(
          async (r) => (await r.body?.cancel(), r.status),
          () => 0,
        );
        assertEquals(after, 0, "nothing listens after the exit");
      } finally {
        await server?.kill();
        await cleanup();
      }
    },
  });
}

Deno.test({
  ...opts,
  name: "cli: SIGTERM during a streamed request body still answers it",
  async fn() {
    const { dir, d, cleanup } = await dataDir();
    let server: Served | undefined;
    try {
      await seedAdmins(dir, { "up@example.com": "up-password-1" });
      server = await startCli([...d, "serve", "--port", "0", "--host", HOST]);
      const s = server;
      let r = await call(s.url, "POST", "/api/v1/sys/admins/login", {
        body: { identity: "up@example.com", password: "up-password-1" },
      });
      expectStatus(r, 200, "login");
      const token = r.data.token;
      r = await call(s.url, "POST", "/api/v1/schemas", {
        token,
        body: {
          name: "notes",
          type: "base",
          fields: [{ name: "title", type: "string" }],
        },
      });
      expectStatus(r, 201, "create entity");
      // A create whose body arrives slowly: the request is in flight when
      // the signal comes; graceful shutdown must still answer it.
      const enc = new TextEncoder();
      let push!: (text: string | null) => void;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          push = (text) =>
            text === null ? c.close() : c.enqueue(enc.encode(text));
        },
      });
      const pending = fetch(`${s.url}/api/v1/entities/notes`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
        },
        body,
      }).then(async (res) => ({ status: res.status, text: await res.text() }))
        .catch((err) => ({ status: 0, text: String(err) }));
      push('{"title": "in fl');
      await pause(400);
      const stopping = s.stop("SIGTERM", 15_000);
      await pause(400);
      push('ight"}');
      push(null);
      const res = await pending;
      const stopped = await stopping;
      server = undefined;
      assertEquals(stopped, { code: 0, timedOut: false }, s.stderr());
      assertEquals(
        res.status,
        201,
        `in-flight streamed create during shutdown: ${
          res.text.slice(0, 300)
        }\n--- server stderr\n${s.stderr().slice(-1500)}`,
      );
      // It was stored (read by an app in this process on the same data).
      const again = await startServer("sqlite", {
        dataDir: dir,
        jwtSecret: SECRET,
      });
      try {
        r = await call(again.url, "GET", "/api/v1/entities/notes?count=true", {
          token,
        });
        expectStatus(r, 200, "list after restart");
        assertEquals(r.data.total, 1);
      } finally {
        await again.close();
      }
    } finally {
      await server?.kill();
      await cleanup();
    }
  },
});
