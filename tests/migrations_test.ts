/**
 * Migration files (`--migrationsDir`, `mb_migrations`): `moonbase migrate
 * create|up|down|status` through the CLI; a failing migration rolls back
 * all it did and stops `migrate up` and the server's start with one line
 * naming the file; two instances starting at once apply each migration
 * once; `--dev` writes a migration per schema change made through the API,
 * which applied to a fresh server gives the same schemas (and reverts).
 *
 * Each test makes its own directories and databases; its steps share them
 * in order (each reads what the one before left).
 *
 * @module
 */

import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import {
  assertErrorExit,
  childEnv,
  runCli,
  show,
  tempDir,
} from "./_cli_fixtures.ts";
import { cliSession } from "./_cli_session.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { Migrations } from "../lib/migrations/runner.ts";

const env = () => childEnv(TEST_JWT_SECRET);

/** A database for a test: a data dir, and a PostgreSQL database when asked. */
async function database(db: "sqlite" | "postgres") {
  const dataDir = await tempDir();
  const connection = db === "postgres"
    ? await (await startPostgres()).createDatabase()
    : undefined;
  const args = [
    "--dataDir",
    dataDir,
    ...(connection ? ["--database", "PSQL", "--connection", connection] : []),
  ];
  return { dataDir, connection, args };
}

const TAGS = `export async function up(app) {
  await app.schemas.create({
    name: "tags",
    type: "base",
    fields: [{ name: "label", type: "string", required: true }],
  });
}
export async function down(app) {
  await app.schemas.delete("tags");
}
`;

const TAG_ROWS = `export async function up(app) {
  await app.entities.get("tags").create({ label: "first" });
  const [row] = await app.db.query('SELECT COUNT(*) AS "n" FROM "tags"');
  await app.entities.get("tags").create({ label: "count " + Number(row.n) });
}
export async function down(app) {
  await app.db.run('DELETE FROM "tags"');
}
`;

/** Creates an entity and records, then fails: none of it may stay. */
const FAILING = `export async function up(app) {
  await app.schemas.create({ name: "broken", type: "base", fields: [] });
  await app.entities.get("tags").create({ label: "doomed" });
  throw new Error("boom at the end");
}
`;

async function labels(s: TestServer): Promise<string[]> {
  const r = await s.request("GET", "/api/v1/entities/tags?sort=created", {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, "tags");
  return r.data.items.map((t: { label: string }) => t.label);
}

forEachDb("migrate up, down, status and create", async (t, db) => {
  const { dataDir, connection, args } = await database(db);
  const dir = join(dataDir, "migrations");
  // The commands run one after another in one process.
  const session = cliSession(env());
  const cli = (...rest: string[]) =>
    session.run([...args, "--migrationsDir", dir, "migrate", ...rest]);
  try {
    await t.step("create writes numbered files from the template", async () => {
      for (const name of ["add_tags", "tag_rows"]) {
        const o = await cli("create", name);
        assertEquals(o.code, 0, show(o));
      }
      const o = await cli("create", "bad-name");
      assertErrorExit(o, /use 1-64 letters/);
      const text = await Deno.readTextFile(join(dir, "0001_add_tags.ts"));
      assert(/export async function up\(app/.test(text), text);
      assert(/export async function down\(app/.test(text), text);
      await Deno.writeTextFile(join(dir, "0001_add_tags.ts"), TAGS);
      await Deno.writeTextFile(join(dir, "0002_tag_rows.ts"), TAG_ROWS);
    });

    await t.step(
      "status lists them pending; up applies them in order",
      async () => {
        let o = await cli("status");
        assertEquals(o.code, 0, show(o));
        assertEquals(o.stdout.trim().split("\n"), [
          "0001_add_tags.ts\tpending",
          "0002_tag_rows.ts\tpending",
        ]);
        o = await cli("up");
        assertEquals(o.code, 0, show(o));
        assertEquals(o.stdout.trim().split("\n"), [
          "Applied 0001_add_tags.ts",
          "Applied 0002_tag_rows.ts",
        ]);
        o = await cli("up");
        assertEquals(o.stdout.trim(), "No pending migrations", show(o));
        o = await cli("status");
        assert(
          /^0001_add_tags\.ts\tapplied \S+\n0002_tag_rows\.ts\tapplied \S+$/
            .test(o.stdout.trim()),
          show(o),
        );
      },
    );

    await t.step("a failing migration rolls back and stops up", async () => {
      await Deno.writeTextFile(join(dir, "0003_failing.ts"), FAILING);
      const o = await cli("up");
      assertErrorExit(
        o,
        /Cannot apply migration 0003_failing\.ts: boom at the end/,
      );
      const s = await startServer(db, { dataDir, connection });
      try {
        assertEquals(await labels(s), ["first", "count 1"]);
        assertStatus(
          await s.request("GET", "/api/v1/schemas/broken", {
            token: await s.adminToken(),
          }),
          404,
          "broken",
        );
      } finally {
        await s.close();
      }
      await Deno.remove(join(dir, "0003_failing.ts"));
    });

    await t.step(
      "down reverts the last one applied, then the one before",
      async () => {
        let o = await cli("down");
        assertEquals(o.stdout.trim(), "Reverted 0002_tag_rows.ts", show(o));
        o = await cli("status");
        assert(/0002_tag_rows\.ts\tpending/.test(o.stdout), show(o));
        o = await cli("down");
        assertEquals(o.stdout.trim(), "Reverted 0001_add_tags.ts", show(o));
        o = await cli("down");
        assertEquals(o.stdout.trim(), "No migration to revert", show(o));
        o = await cli("sideways");
        assertErrorExit(o, /migrate needs up, down, status or create/);
      },
    );
  } finally {
    await session.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

forEachDb("migrations at server start", async (t, db) => {
  const { dataDir, connection, args } = await database(db);
  const dir = join(dataDir, "migrations");
  await Deno.mkdir(dir);
  await Deno.writeTextFile(join(dir, "0001_add_tags.ts"), TAGS);
  await Deno.writeTextFile(join(dir, "0002_tag_rows.ts"), TAG_ROWS);
  await Deno.writeTextFile(join(dir, "0003_failing.ts"), FAILING);
  try {
    await t.step(
      "a failed migration stops the start with one line naming the file",
      async () => {
        const o = await runCli(
          [
            ...args,
            "--migrationsDir",
            dir,
            "serve",
            "--port",
            "0",
            "--host",
            "127.0.0.1",
          ],
          { env: env() },
        );
        assertErrorExit(
          o,
          /^moonbase: Cannot apply migration 0003_failing\.ts: boom at the end$/m,
        );
      },
    );

    await t.step(
      "the ones before it are applied once, the failed one not at all",
      async () => {
        await Deno.remove(join(dir, "0003_failing.ts"));
        const s = await startServer(db, {
          dataDir,
          connection,
          migrationsDir: dir,
        });
        try {
          assertEquals(await labels(s), ["first", "count 1"]);
          assertEquals(
            (await new Migrations(s.app, dir).status()).map((m) =>
              `${m.name} ${m.applied !== null}`
            ),
            ["0001_add_tags.ts true", "0002_tag_rows.ts true"],
          );
        } finally {
          await s.close();
        }
      },
    );
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

/** Counts its runs in a table of its own, slowly, so that racers overlap. */
const SLOW = `export async function up(app) {
  await app.db.run('CREATE TABLE IF NOT EXISTS "race_runs" ("n" INTEGER)');
  await app.db.run('INSERT INTO "race_runs" ("n") VALUES (1)');
  await new Promise((r) => setTimeout(r, 400));
  await app.schemas.create({ name: "raced", type: "base", fields: [] });
}
`;

Deno.test({
  name:
    "migrations: two servers starting at once on one PostgreSQL apply each once",
  ignore: !hasPostgres(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { connection } = await database("postgres");
    const dir = await tempDir();
    await Deno.writeTextFile(join(dir, "0001_slow.ts"), SLOW);
    await Deno.writeTextFile(
      join(dir, "0002_slow_again.ts"),
      SLOW.replaceAll("raced", "raced_again"),
    );
    const servers = await Promise.all(
      [1, 2].map(() =>
        startServer("postgres", { connection, migrationsDir: dir })
      ),
    );
    try {
      const [a, b] = servers;
      const rows = await a.app.storage.query(
        `SELECT COUNT(*) AS "n" FROM "race_runs"`,
      );
      assertEquals(Number(rows[0].n), 2);
      const applied = await a.app.storage.query(
        `SELECT "name" FROM "mb_migrations" ORDER BY 1`,
      );
      assertEquals(applied.map((r) => r.name), [
        "0001_slow.ts",
        "0002_slow_again.ts",
      ]);
      // Both serve the entities, whichever applied them.
      for (const s of [a, b]) {
        for (const name of ["raced", "raced_again"]) {
          assertStatus(
            await s.request("GET", `/api/v1/schemas/${name}`, {
              token: await s.adminToken(),
            }),
            200,
            name,
          );
        }
      }
    } finally {
      for (const s of servers) await s.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "migrations: two migrate up processes at once on one SQLite database apply each once",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { dataDir, args } = await database("sqlite");
    const dir = join(dataDir, "migrations");
    await Deno.mkdir(dir);
    await Deno.writeTextFile(join(dir, "0001_slow.ts"), SLOW);
    try {
      // The database made first: two processes opening a new SQLite file at
      // once is not what this test is about.
      const first = await runCli([
        ...args,
        "--migrationsDir",
        dir,
        "migrate",
        "status",
      ], {
        env: env(),
      });
      assertEquals(first.code, 0, show(first));
      const outs = await Promise.all(
        [1, 2].map(() =>
          runCli([...args, "--migrationsDir", dir, "migrate", "up"], {
            env: env(),
          })
        ),
      );
      for (const o of outs) assertEquals(o.code, 0, show(o));
      assertEquals(
        outs.map((o) => o.stdout.trim()).sort(),
        ["Applied 0001_slow.ts", "No pending migrations"],
      );
      const s = await startServer("sqlite", { dataDir });
      try {
        const rows = await s.app.storage.query(
          `SELECT COUNT(*) AS "n" FROM "race_runs"`,
        );
        assertEquals(Number(rows[0].n), 1);
      } finally {
        await s.close();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});

forEachDb(
  "migrations: --dev writes one per API schema change",
  async (t, db) => {
    const dir = await tempDir();
    const dev = await startServer(db, { dev: true, migrationsDir: dir });
    const admin = await dev.adminToken();
    const call = async (
      method: string,
      path: string,
      body: unknown,
      status: number,
    ) => {
      const r = await dev.request(method, path, { token: admin, body });
      assertStatus(r, status, `${method} ${path}`);
      return r.data;
    };
    try {
      await t.step(
        "each change writes a file recorded as applied",
        async () => {
          const notes = await call("POST", "/api/v1/schemas", {
            name: "notes",
            type: "base",
            fields: [
              { name: "title", type: "string", required: true },
              { name: "draft", type: "bool", default: true },
              {
                name: "parent",
                type: "relation",
                foreign_key: { entity: "notes" },
              },
            ],
            indexes: [{ fields: ["title", "draft"], unique: true }],
          }, 201);
          const title = notes.fields.find((f: { name: string }) =>
            f.name === "title"
          );
          const draft = notes.fields.find((f: { name: string }) =>
            f.name === "draft"
          );
          await call("PATCH", "/api/v1/schemas/notes", {
            fields: [
              { id: title.id, name: "heading" },
              { id: draft.id, op: "delete" },
              { name: "body", type: "text" },
            ],
            indexes: [{ fields: ["heading"] }],
            rules: { list: { mode: "public", expr: "" } },
          }, 200);
          await call("POST", "/api/v1/schemas", {
            name: "scratch",
            type: "base",
            fields: [],
          }, 201);
          await call("DELETE", "/api/v1/schemas/scratch", undefined, 204);
          await call("POST", "/api/v1/schemas", {
            name: "note_titles",
            type: "view",
            view_query: "SELECT id, heading FROM notes",
          }, 201);
          // A PATCH that changes nothing writes nothing.
          await call("PATCH", "/api/v1/schemas/notes", { has_api: true }, 200);
          const names = (await new Migrations(dev.app, dir).status()).map((m) =>
            `${m.name} ${m.applied !== null}`
          );
          assertEquals(names, [
            "0001_create_notes.ts true",
            "0002_update_notes.ts true",
            "0003_create_scratch.ts true",
            "0004_delete_scratch.ts true",
            "0005_create_note_titles.ts true",
          ]);
          // The dev server itself has nothing pending.
          assertEquals(await new Migrations(dev.app, dir).up(), []);
        },
      );

      await t.step(
        "applied to a fresh server they give the same schemas",
        async () => {
          const fresh = await startServer(db, { migrationsDir: dir });
          try {
            const exported = async (s: TestServer) =>
              (await s.request("GET", "/api/v1/schemas/export", {
                token: await s.adminToken(),
              })).data.schemas.map(
                (
                  { created: _c, updated: _u, ...rest }: Record<
                    string,
                    unknown
                  >,
                ) => rest,
              );
            assertEquals(await exported(fresh), await exported(dev));
            // And the downs undo them, one by one, to nothing.
            const m = new Migrations(fresh.app, dir);
            for (let i = 0; i < 5; i++) assert(await m.down(), `down ${i}`);
            assertEquals(await exported(fresh), []);
            assertEquals(await m.up(), [
              "0001_create_notes.ts",
              "0002_update_notes.ts",
              "0003_create_scratch.ts",
              "0004_delete_scratch.ts",
              "0005_create_note_titles.ts",
            ]);
            assertEquals(await exported(fresh), await exported(dev));
          } finally {
            await fresh.close();
          }
        },
      );
    } finally {
      await dev.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
