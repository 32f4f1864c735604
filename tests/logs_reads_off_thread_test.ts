/**
 * An admin's log search over a large log store holds up no other request:
 * while a search that matches nothing scans every row, the server answers
 * other requests, and answers them before the search.
 * On SQLite the reads (page, stats, entry) run on the log store's reader
 * thread, on a read-only connection of its own with the text functions
 * (the search folds case and accents with `mb_fold`): the request thread's
 * connection reads nothing. (On the request thread, the scan of the rows
 * was one synchronous statement: nothing else was answered until it
 * ended.) On PostgreSQL the statements run in the database, as before. The
 * reads answer as before, and the reader thread keeps no process alive
 * after `app.close()`.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { BLOCK_INSERT_SQL, encodeBlock } from "../lib/logs/block.ts";
import { chunkOf, type PackedRequest } from "../lib/logs/packed.ts";

/**
 * Rows of request entries written straight into the log store: enough for
 * a search to outlast a few health requests by far (each row's text is
 * folded by a function call).
 */
const ROWS = { sqlite: 200_000, postgres: 100_000 };
/** Blocks of `PER_BLOCK` request entries. */
const BLOCKS = 100;
const PER_BLOCK = 512;
/** A search no entry matches: it reads every row and every block. */
const NOTHING = "/api/v1/sys/logs?search=matches-nothing-at-all&limit=10";
/** Health answers the search must not hold up. */
const HEALTH = 3;

/** Writes `n` request rows, a hundred per ms from `start`. */
async function seedRows(
  s: TestServer,
  start: number,
  n: number,
): Promise<void> {
  const cols =
    `"id", "time", "level", "level_n", "type", "message", "method", "path", "status", "duration_ms"`;
  await s.app.logs.storage.run(
    s.db === "postgres"
      ? `INSERT INTO "mb_logs" (${cols}) SELECT lpad(to_hex(${start}::bigint + i / 100), 12, '0') || '-' || lpad(to_hex(i), 8, '0') || '-seedaa', '', '', 1, 'request', '', 'GET', '/seed/' || i, 200, 1.0 FROM generate_series(0, ${
        n - 1
      }) AS g(i)`
      : `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ${
        n - 1
      }) INSERT INTO "mb_logs" (${cols}) SELECT printf('%012x-%08x-seedaa', ${start} + i / 100, i), '', '', 1, 'request', '', 'GET', '/seed/' || i, 200, 1.0 FROM c`,
  );
}

/** Writes `BLOCKS` blocks, block `b` with the path `/block/<b>`. */
async function seedBlocks(s: TestServer, start: number): Promise<void> {
  for (let b = 0; b < BLOCKS; b++) {
    const entries: PackedRequest[] = Array.from(
      { length: PER_BLOCK },
      (_, i) => [
        start + 10_000 + b * PER_BLOCK + i,
        i,
        1,
        "GET",
        `/block/${b}`,
        200,
        1,
        null,
        null,
        null,
        `rb${b}-${i}`,
      ],
    );
    const block = encodeBlock(chunkOf(entries), "seedbb")!;
    await s.app.logs.storage.run(BLOCK_INSERT_SQL, [
      block.lo,
      block.hi,
      block.rows,
      block.data,
    ]);
  }
}

forEachDb("logs: a search over a large store holds up no other request", async (
  t,
  db,
) => {
  const s = await startServer(db, { logMaxRows: 10_000_000 });
  try {
    const token = await s.adminToken();
    const start = Date.now() - 3_600_000;
    const rows = ROWS[db];
    await seedRows(s, start, rows);

    await t.step("other requests are answered before the search", async () => {
      const order: string[] = [];
      const search = s.request("GET", NOTHING, { token }).then((r) => {
        order.push("search");
        return r;
      });
      for (let i = 0; i < HEALTH; i++) {
        const h = await s.request("GET", "/api/v1/health");
        assertStatus(h, 200, "health during the search");
        order.push("health");
      }
      const r = await search;
      assertStatus(r, 200, "the search");
      assertEquals(r.data.items, [], "nothing matches");
      assertEquals(
        order,
        [...Array(HEALTH).fill("health"), "search"],
        "every health answer came before the search's",
      );
    });

    // Blocks only now: the first step's search reads rows, whose scan on
    // the request thread was one statement nothing could pass (reading
    // blocks there gives other requests a turn every 10 ms, block_read.ts).
    await seedBlocks(s, start);
    s.app.log.info("Grüße von Émile");

    if (db === "sqlite") {
      await t.step(
        "the request thread's connection reads nothing",
        async () => {
          const st = s.app.logs.storage;
          const seen: string[] = [];
          const query = st.query;
          st.query = (sql, params) => {
            seen.push(sql);
            return query.call(st, sql, params);
          };
          try {
            const page = await s.request("GET", NOTHING, { token });
            assertStatus(page, 200, "a search over rows and blocks");
            const stats = await s.request("GET", "/api/v1/sys/logs/stats", {
              token,
            });
            assertStatus(stats, 200, "stats");
            const one = await s.request(
              "GET",
              `/api/v1/sys/logs/${
                start.toString(16).padStart(12, "0")
              }-00000000-seedaa`,
              { token },
            );
            assertStatus(one, 200, "an entry by id");
          } finally {
            delete (st as Partial<typeof st>).query;
          }
          assertEquals(seen, [], "the request thread read nothing");
        },
      );
    }

    await t.step("the reads answer as before", async () => {
      const r = await s.request(
        "GET",
        `/api/v1/sys/logs?search=%2Fseed%2F${rows - 1}&limit=5`,
        { token },
      );
      assertStatus(r, 200, "a search that matches one row");
      assertEquals(r.data.items.length, 1);
      const id = r.data.items[0].id as string;
      const one = await s.request("GET", `/api/v1/sys/logs/${id}`, { token });
      assertStatus(one, 200, "by id");
      assertEquals(one.data.path, `/seed/${rows - 1}`);
      const blk = await s.request(
        "GET",
        "/api/v1/sys/logs?search=%2Fblock%2F7%20200&limit=600",
        { token },
      );
      assertStatus(blk, 200, "block entries");
      assertEquals(blk.data.items.length, PER_BLOCK);
      const inBlock = await s.request(
        "GET",
        `/api/v1/sys/logs/${blk.data.items[3].id}`,
        { token },
      );
      assertStatus(inBlock, 200, "a block's entry by id");
      assertEquals(inBlock.data, blk.data.items[3]);
      const folded = await s.request(
        "GET",
        "/api/v1/sys/logs?search=GRUSSE%20VON%20EMILE",
        { token },
      );
      assertStatus(folded, 200, "a folded search");
      assertEquals(
        folded.data.items.map((e: { message: string }) => e.message),
        ["Grüße von Émile"],
        "case and accents folded as by fold()",
      );
      const stats = await s.request(
        "GET",
        `/api/v1/sys/logs/stats?start_date=${
          new Date(start).toISOString()
        }&end_date=${new Date(start + 3_600_000).toISOString()}&buckets=1`,
        { token },
      );
      assertStatus(stats, 200, "stats");
      assertEquals(stats.data.buckets[0].requests, rows + BLOCKS * PER_BLOCK);
    });
  } finally {
    await s.close();
  }
});

/** A program that reads logs, closes the app with a read in flight, and ends. */
const PROGRAM = `
import { createApp } from "MOD";
import { internalApp } from "INTERNAL";
const dataDir = await Deno.makeTempDir({ prefix: "mb_logread_" });
const app = await createApp({
  dataDir,
  quiet: true,
  jwtSecret: "logread-secret-0123456789-abcdefghijklm",
});
const logs = internalApp(app).logs;
const first = await logs.query({ limit: 1 });
const inFlight = logs.query({ limit: 1, search: "x" }).then(
  () => "answered",
  (err) => err.name + ": " + err.message,
);
await app.close();
const after = await logs.query({ limit: 1 }).then(
  () => "answered",
  (err) => err.name + ": " + err.message,
);
await Deno.remove(dataDir, { recursive: true });
console.log(JSON.stringify({ first: first.items.length, inFlight: await inFlight, after }));
`;

Deno.test("logs: the reader thread keeps no process alive after app.close() [sqlite]", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mb_logread_prog_" });
  try {
    const root = new URL("..", import.meta.url);
    await Deno.writeTextFile(
      `${dir}/main.ts`,
      PROGRAM.replace("MOD", new URL("mod.ts", root).href).replace(
        "INTERNAL",
        new URL("lib/internal_app.ts", root).href,
      ),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", `${dir}/main.ts`],
      cwd: fileURLToPath(root),
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
      // A process the reader thread kept alive fails here instead of
      // holding the suite (a hang guard, not a speed limit).
      signal: AbortSignal.timeout(120_000),
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, `the program ended by itself: ${stderr}`);
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assertEquals(typeof result.first, "number", "a read before close");
    assert(
      result.inFlight === "answered" ||
        result.inFlight ===
          "MoonbaseError: Cannot read logs: the server is stopping",
      `a read in flight at close: ${result.inFlight}`,
    );
    assertEquals(
      result.after,
      "MoonbaseError: Cannot read logs: the server is stopping",
      "a read after close",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
