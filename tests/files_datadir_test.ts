/**
 * A data directory belongs to one database (issue 27: a CLI command on
 * another database deleted every uploaded file). On each database, with
 * files of another database in the directory:
 * - a CLI command or a server of another database is refused with one line
 *   naming both, and writes or removes nothing there;
 * - the start-up sweep removes the file of an upload a crash cut off (this
 *   database recorded it) and nothing it did not record;
 * - files from before the ledger are adopted when a record references them;
 * - with `--rebindDataDir` another database takes the directory over, and
 *   neither database removes a file of the other.
 *
 * @module
 */

import { join } from "node:path";
import { createApp } from "../mod.ts";
import { createCore } from "../lib/core.ts";
import { logIdFloor } from "../lib/logs/rows.ts";
import type { AppConfig } from "../lib/config.ts";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import {
  assertErrorExit,
  HOST,
  runCli,
  show,
  startCli,
} from "./_cli_fixtures.ts";
import {
  createEntity,
  createWith,
  exists,
  getFile,
  multipart,
  PUBLIC,
  walk,
} from "./_files_fixtures.ts";
import { poll } from "./_wait.ts";

type Db = "sqlite" | "postgres";

/** A database: its kind, its config for `createApp`, its CLI options. */
interface Database {
  db: Db;
  label: string;
  config: AppConfig;
  args: string[];
}

const PASSWORD = "never-shown-pw";

async function postgresDb(label: string): Promise<Database> {
  const url = (await (await startPostgres()).createDatabase())
    // A password in the URL (the test cluster trusts every login) must never be shown.
    .replace("postgres@", `postgres:${PASSWORD}@`);
  return {
    db: "postgres",
    label,
    config: { database: "PSQL", connection: url },
    args: ["--database", "PSQL", "--connection", url],
  };
}

const sqliteDb: Database = {
  db: "sqlite",
  label: "SQLite",
  config: {},
  args: [],
};

/** The databases other than `own` that a test points at the directory. */
async function othersOf(own: Db): Promise<Database[]> {
  if (!hasPostgres()) return [];
  return own === "sqlite"
    ? [await postgresDb("PostgreSQL")]
    : [sqliteDb, await postgresDb("another PostgreSQL database")];
}

/** What a message names a database as. */
function named(dataDir: string, d: Database): string {
  if (d.db === "sqlite") return `the SQLite database ${dataDir}/moonbase.db`;
  const u = new URL(d.config.connection!);
  return `the PostgreSQL database postgres@127.0.0.1:${u.port}${u.pathname}`;
}

function serverOf(d: Database, dataDir: string, extra: AppConfig = {}) {
  return startServer(d.db, { dataDir, ...d.config, ...extra });
}

/** Every path under the directory (the files and the database's own). */
async function everything(dataDir: string): Promise<string[]> {
  return (await walk(dataDir)).filter((p) => !/-(wal|shm|journal)$/.test(p));
}

/** A refusal's one line: it names both databases, never a password. */
function assertRefusal(
  line: string,
  dataDir: string,
  owner: string,
  refused: string,
): void {
  assert(
    line.includes(`Cannot use data dir ${dataDir}: it belongs to ${owner}`) ||
      line.includes(`Cannot use data dir ${dataDir}: it holds`),
    `names the directory and its database: ${line}`,
  );
  assert(line.includes(owner), `names ${owner}: ${line}`);
  assert(line.includes(refused), `names ${refused}: ${line}`);
  assert(line.includes("--rebindDataDir"), `says how to override: ${line}`);
  assert(!line.includes(PASSWORD), `shows no password: ${line}`);
  assert(!line.includes("\n"), "one line");
}

/** Starts an upload of `entity`'s file field `doc` and never finishes it. */
function hangingUpload(url: string, entity: string): Promise<unknown> {
  const m = multipart([{
    name: "doc",
    filename: "crash.txt",
    data: "x".repeat(4096),
  }]);
  // Everything but the closing boundary: the server is streaming the file.
  const head = m.body.slice(0, m.body.length - 64);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
    },
  });
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    headers: { "content-type": m.type },
    body,
    duplex: "half",
  };
  return fetch(`${url}/api/v1/entities/${entity}`, init).then(
    (r) => r.body?.cancel(),
    () => undefined,
  );
}

async function docsEntity(s: TestServer, name: string): Promise<string> {
  const e = await createEntity(s, {
    name,
    type: "base",
    fields: [{ name: "doc", type: "file" }],
    rules: { get: PUBLIC, list: PUBLIC, add: PUBLIC },
  });
  return e.id;
}

forEachDb("files: a data dir belongs to one database", async (t, db) => {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_datadir_" });
  const own: Database = db === "sqlite"
    ? sqliteDb
    : await postgresDb("PostgreSQL");
  const others = await othersOf(db);
  const filesDir = join(dataDir, "files");
  try {
    // This database's entity and one uploaded file.
    let docsId = "", kept = "";
    {
      const s = await serverOf(own, dataDir);
      try {
        docsId = await docsEntity(s, "docs");
        const r = await createWith(s, "docs", [
          { name: "doc", filename: "kept.txt", data: "kept" },
        ]);
        kept = r.doc as string;
      } finally {
        await s.close();
      }
    }
    const keptPath = join(filesDir, docsId, kept);
    const marker = JSON.parse(
      await Deno.readTextFile(join(dataDir, "database.json")),
    );
    assertEquals(marker.kind, db, "the marker names this database");
    assert(
      !JSON.stringify(marker).includes(PASSWORD),
      "the marker holds no password",
    );

    await t.step(
      "a CLI command of another database writes nothing",
      async () => {
        const before = await everything(dataDir);
        const runs = await Promise.all(
          others.map((o) =>
            runCli(["admins", "--ls", "--dataDir", dataDir, ...o.args])
          ),
        );
        assert(await exists(keptPath), "the uploaded file is still there");
        assertEquals(
          await everything(dataDir),
          before,
          "the directory as it was",
        );
        for (const [i, o] of others.entries()) {
          assertErrorExit(runs[i], /Cannot use data dir/);
          assertRefusal(
            runs[i].stderr.split("\n")[0],
            dataDir,
            named(dataDir, own),
            named(dataDir, o),
          );
        }
      },
    );

    await t.step("a server of another database is refused", async () => {
      const before = await everything(dataDir);
      for (const o of others) {
        let message = "";
        try {
          const app = await createApp({ quiet: true, dataDir, ...o.config });
          await app.close();
        } catch (err) {
          message = err instanceof Error ? err.message : String(err);
        }
        assertRefusal(message, dataDir, named(dataDir, own), named(dataDir, o));
      }
      assertEquals(
        await everything(dataDir),
        before,
        "the directory as it was",
      );
    });

    await t.step(
      "a CLI command prunes no logs (it may lack the server's retention)",
      async () => {
        // A server kept with --logRetentionDays 30 has a 10-day-old entry.
        const old = `${logIdFloor(Date.now() - 10 * 86_400_000)}-00000000-test`;
        const insert = await createCore(
          { quiet: true, dataDir, logRetentionDays: 30, ...own.config },
          "command",
        );
        try {
          await insert.logs.storage.run(
            `INSERT INTO "mb_logs" ("id", "time", "level", "level_n", "type", "message") VALUES (?, ?, 'info', 2, 'app', 'ten days old')`,
            [old, new Date(Date.now() - 10 * 86_400_000).toISOString()],
          );
        } finally {
          await insert.close();
        }
        const o = await runCli([
          "admins",
          "--ls",
          "--dataDir",
          dataDir,
          ...own.args,
        ]);
        assertEquals(o.code, 0, show(o));
        const core = await createCore(
          { quiet: true, dataDir, ...own.config },
          "command",
        );
        try {
          const rows = await core.logs.storage.query(
            `SELECT "id" FROM "mb_logs" WHERE "id" = ?`,
            [old],
          );
          assertEquals(rows.length, 1, "the old entry is kept");
        } finally {
          await core.close();
        }
      },
    );

    // Files of another database in this database's entity directory and in
    // a directory of an entity this database does not have.
    const foreignFile = join(filesDir, docsId, "other_abcdefghij.txt");
    const foreignDir = join(filesDir, crypto.randomUUID());
    await Deno.writeTextFile(foreignFile, "not ours");
    await Deno.mkdir(foreignDir);
    await Deno.writeTextFile(join(foreignDir, "y_abcdefghij.txt"), "not ours");

    await t.step(
      "the start-up sweep removes a crashed upload's file, nothing it did not record",
      async () => {
        const served = await startCli([
          "serve",
          "--port",
          "0",
          "--host",
          HOST,
          "--dataDir",
          dataDir,
          ...own.args,
        ]);
        let stray: string;
        try {
          void hangingUpload(served.url, "docs");
          stray = await poll("the upload's file on disk", async () => {
            const names = await walk(join(filesDir, docsId));
            return names.find((n) =>
              n !== kept && n !== "other_abcdefghij.txt"
            );
          }, { deadline: 30_000 });
          assert(
            served.stdout().includes("listening") &&
              !served.stderr().includes("Cannot"),
            served.stderr(),
          );
        } finally {
          await served.kill(); // a crash: SIGKILL in the middle of the upload
        }
        assert(
          await exists(join(filesDir, docsId, stray)),
          "left by the crash",
        );
        // Past the grace period kept for other instances' uploads in flight
        // (PostgreSQL): a core alone (what a CLI command runs) sweeps nothing.
        const core = await createCore({ quiet: true, dataDir, ...own.config });
        try {
          const n = await core.storage.run(
            `UPDATE "mb_files" SET "created" = "created" - 3600000 WHERE "name" = ?`,
            [stray],
          );
          assertEquals(n, 1, "the crashed upload was recorded first");
        } finally {
          await core.close();
        }
        assert(await exists(join(filesDir, docsId, stray)), "no sweep yet");
        const s = await serverOf(own, dataDir);
        try {
          assertEquals(
            await exists(join(filesDir, docsId, stray)),
            false,
            "the crashed upload's file is swept",
          );
          assert(await exists(keptPath), "a referenced file stays");
          assert(await exists(foreignFile), "an unrecorded file stays");
          assertEquals(
            await walk(foreignDir),
            ["y_abcdefghij.txt"],
            "a directory of an unknown entity stays",
          );
          const g = await getFile(s, `/api/files/docs/${kept}`);
          assertEquals([g.status, g.text], [200, "kept"]);
        } finally {
          await s.close();
        }
      },
    );

    await t.step(
      "files from before the ledger are adopted when referenced",
      async () => {
        let s = await serverOf(own, dataDir);
        let old: { id: string; doc: string };
        try {
          old = await createWith(s, "docs", [
            { name: "doc", filename: "old.txt", data: "old" },
          ]) as { id: string; doc: string };
          // As a database of an older version left it: no ledger, no marker.
          await s.app.storage.run(`DELETE FROM "mb_files"`);
          await s.app.storage.run(
            `DELETE FROM "mb_meta" WHERE "key" = 'files_adopted'`,
          );
        } finally {
          await s.close();
        }
        await Deno.remove(join(dataDir, "database.json"));
        s = await serverOf(own, dataDir);
        try {
          assert(await exists(join(dataDir, "database.json")), "bound again");
          assert(await exists(keptPath), "an unrecorded referenced file stays");
          assert(await exists(foreignFile), "an unrecorded file stays");
          const r = await s.request(
            "DELETE",
            `/api/v1/entities/docs/${old.id}`,
            { token: await s.adminToken() },
          );
          assertStatus(r, 204, "delete the old record");
          assertEquals(
            await exists(join(filesDir, docsId, old.doc)),
            false,
            "an adopted file goes with its record",
          );
        } finally {
          await s.close();
        }
      },
    );

    const other = others[0];
    await t.step({
      name:
        "--rebindDataDir hands the dir over; neither database removes the other's files",
      ignore: !other,
      fn: async () => {
        const before = await walk(filesDir);
        const o = await runCli([
          "admins",
          "--ls",
          "--rebindDataDir",
          "--dataDir",
          dataDir,
          ...other.args,
        ]);
        assertEquals(o.code, 0, show(o));
        assertEquals(await walk(filesDir), before, "no file removed");
        let s = await serverOf(other, dataDir);
        let theirs: string;
        let notesId: string;
        try {
          assertEquals(await walk(filesDir), before, "no file swept");
          notesId = await docsEntity(s, "notes");
          theirs = (await createWith(s, "notes", [
            { name: "doc", filename: "theirs.txt", data: "theirs" },
          ])).doc as string;
        } finally {
          await s.close();
        }
        let message = "";
        try {
          await (await createApp({ quiet: true, dataDir, ...own.config }))
            .close();
        } catch (err) {
          message = err instanceof Error ? err.message : String(err);
        }
        assertRefusal(
          message,
          dataDir,
          named(dataDir, other),
          named(dataDir, own),
        );
        s = await serverOf(own, dataDir, { rebindDataDir: true });
        try {
          assert(
            await exists(join(filesDir, notesId, theirs)),
            "the other database's upload stays",
          );
          const g = await getFile(s, `/api/files/docs/${kept}`);
          assertEquals([g.status, g.text], [200, "kept"], "ours is served");
          // Dropping our entity removes what we recorded, not the other's.
          const r = await s.request("DELETE", `/api/v1/schemas/docs`, {
            token: await s.adminToken(),
          });
          assertStatus(r, 204, "drop docs");
          assertEquals(await exists(keptPath), false, "our file went with it");
          assert(await exists(foreignFile), "the unrecorded file stays");
        } finally {
          await s.close();
        }
      },
    });

    if (db === "sqlite") {
      await t.step(
        "a SQLite data dir whose database is gone is refused",
        async () => {
          for (
            const f of ["moonbase.db", "moonbase.db-wal", "moonbase.db-shm"]
          ) {
            await Deno.remove(join(dataDir, f)).catch(() => {});
          }
          const o = await runCli(["admins", "--ls", "--dataDir", dataDir]);
          assertErrorExit(o, /Cannot use data dir .*which is missing/);
          assertEquals(
            await exists(join(dataDir, "moonbase.db")),
            false,
            "no new database is made",
          );
          assert(await exists(foreignFile), "the files stay");
        },
      );
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

forEachDb(
  "files: a .jwt_secret or database.json that is a directory stops start-up with one line",
  async (t, db) => {
    const own: Database = db === "sqlite"
      ? sqliteDb
      : await postgresDb("PostgreSQL");
    const cases: [string, boolean, RegExp][] = [
      [
        ".jwt_secret",
        false,
        /^Cannot read the JWT secret in .*\/\.jwt_secret: it is a directory, not a file; move it away .*or set MB_JWT_SECRET$/,
      ],
      [
        "database.json",
        false,
        /^Cannot use data dir .*: .*\/database\.json is a directory, not the file naming its database; move it away, or pass --dataDir <another dir>$/,
      ],
      [
        "database.json",
        true,
        /^Cannot use data dir .*: .*\/database\.json is a directory, not the file naming its database; move it away, or pass --dataDir <another dir>$/,
      ],
    ];
    for (const [name, rebind, expected] of cases) {
      await t.step(
        `${name}${rebind ? " with --rebindDataDir" : ""}`,
        async () => {
          const dataDir = await Deno.makeTempDir({ prefix: "mb_datadir_" });
          try {
            await Deno.mkdir(join(dataDir, name));
            let message = "";
            try {
              await (await createApp({
                quiet: true,
                dataDir,
                rebindDataDir: rebind,
                ...own.config,
              })).close();
            } catch (err) {
              message = err instanceof Error ? err.message : String(err);
            }
            // The test's sanitizers also check the failed start left nothing running.
            assert(
              expected.test(message),
              `one line saying what to do: ${message}`,
            );
            assert(
              (await Deno.stat(join(dataDir, name))).isDirectory,
              "left as it was",
            );
          } finally {
            await Deno.remove(dataDir, { recursive: true });
          }
        },
      );
    }
    await t.step("the CLI exits with that line", async () => {
      const dataDir = await Deno.makeTempDir({ prefix: "mb_datadir_" });
      try {
        await Deno.mkdir(join(dataDir, "database.json"));
        const o = await runCli([
          "admins",
          "--ls",
          "--dataDir",
          dataDir,
          ...own.args,
        ]);
        assertErrorExit(
          o,
          /Cannot use data dir .*database\.json is a directory/,
        );
      } finally {
        await Deno.remove(dataDir, { recursive: true });
      }
    });
  },
);
