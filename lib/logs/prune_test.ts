import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { type PruneDb, pruneLogs } from "./prune.ts";
import { logIdOf } from "./rows.ts";
import { encodeBlock } from "./block.ts";
import { chunkOf, type PackedRequest } from "./packed.ts";

/** A log store of ids only: rows, and blocks of `[lo, hi, n]`. */
function store(rows: string[], blocks: [string, string, number][]) {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE "mb_logs" ("id" TEXT PRIMARY KEY); CREATE TABLE "mb_log_blocks" ("lo" TEXT PRIMARY KEY, "hi" TEXT, "n" INT, "data" BLOB)`,
  );
  for (const r of rows) db.prepare(`INSERT INTO "mb_logs" VALUES (?)`).run(r);
  for (const [lo, hi, n] of blocks) {
    db.prepare(`INSERT INTO "mb_log_blocks" VALUES (?, ?, ?, x'00')`).run(
      lo,
      hi,
      n,
    );
  }
  const left = () => ({
    rows: (db.prepare(`SELECT "id" FROM "mb_logs" ORDER BY "id"`).all())
      .map((r) => String(r.id)),
    blocks: (db.prepare(`SELECT "lo" FROM "mb_log_blocks" ORDER BY "lo"`)
      .all()).map((r) => String(r.lo)),
  });
  const pdb: PruneDb = {
    all: (sql, params) =>
      db.prepare(sql).all(...params) as Record<string, unknown>[],
    run: (sql, params) => db.prepare(sql).run(...params),
  };
  return { db, pdb, left };
}

const id = (ms: number, seq = ms) => logIdOf(ms, seq, "aaaaaa");
const row = (ms: number) => logIdOf(ms, ms, "rrrrrr");
const range = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => from + i);

Deno.test("prune keeps the newest maxRows, blocks whole", async () => {
  // Blocks at 0-63 and 100-163; rows at 200-219.
  const s = store(range(200, 20).map(row), [
    [id(0), id(63), 64],
    [id(100), id(163), 64],
  ]);
  await pruneLogs(s.pdb, "000000000000", 70);
  assert.deepEqual(s.left(), {
    rows: range(200, 20).map(row),
    blocks: [id(100)],
  });
  await pruneLogs(s.pdb, "000000000000", 10);
  assert.deepEqual(s.left(), { rows: range(210, 10).map(row), blocks: [] });
  await pruneLogs(s.pdb, "000000000000", 0);
  assert.deepEqual(s.left(), { rows: [], blocks: [] });
});

Deno.test("prune leaves rows written while it runs alone", async () => {
  // A kept block at 100-163 with 10 rows among its entries, 5 newer rows and
  // 20 older ones; a batch lands between the prune's statements.
  const inside = range(110, 10).map(row), newer = range(200, 5).map(row);
  const s = store([...range(10, 20).map(row), ...inside, ...newer], [
    [id(100), id(163), 64],
  ]);
  const arriving = range(300, 20).map(row);
  const pdb: PruneDb = {
    all: (sql, params) => {
      if (sql.includes("OFFSET")) {
        for (const r of arriving) {
          s.db.prepare(`INSERT INTO "mb_logs" VALUES (?)`).run(r);
        }
      }
      return s.pdb.all(sql, params);
    },
    run: s.pdb.run,
  };
  await pruneLogs(pdb, "000000000000", 70);
  const left = new Set(s.left().rows);
  assert.ok([...inside, ...newer, ...arriving].every((r) => left.has(r)));
  assert.deepEqual(s.left().blocks, [id(100)]);
});

Deno.test("prune without a readable count limit prunes by age only", async () => {
  for (const max of [NaN, Infinity]) {
    const s = store(range(0, 5).map(row), [[id(100), id(163), 64]]);
    await pruneLogs(s.pdb, row(2).slice(0, 12), max);
    assert.deepEqual(s.left(), {
      rows: range(2, 3).map(row),
      blocks: [id(100)],
    });
  }
});

Deno.test("prune counts overlapping blocks of two writers by their entries", async () => {
  // Writer a: 0-63 and 100-163; writer b: 32-95, in the same time as a's
  // first. Newer than a's first block's newest (63): a's second (64) and
  // b's entries 64-95 (32): 96 entries, not the 128 of both blocks whole.
  const entries = (from: number, n: number): PackedRequest[] =>
    range(from, n).map((
      ms,
    ) => [ms, ms, 2, "GET", "/p", 200, 1, null, null, null, `r${ms}`]);
  const blocks = [
    encodeBlock(chunkOf(entries(0, 64)), "aaaaaa")!,
    encodeBlock(chunkOf(entries(32, 64)), "bbbbbb")!,
    encodeBlock(chunkOf(entries(100, 64)), "aaaaaa")!,
  ];
  const s = store([], []);
  for (const b of blocks) {
    s.db.prepare(`INSERT INTO "mb_log_blocks" VALUES (?, ?, ?, ?)`).run(
      b.lo,
      b.hi,
      b.rows,
      b.data,
    );
  }
  const all = blocks.map((b) => b.lo).sort();
  // The newest 100 reach into a's first block: it stays (blocks go whole).
  await pruneLogs(s.pdb, "000000000000", 100);
  assert.deepEqual(s.left(), { rows: [], blocks: all });
  // The newest 96 end exactly at its newest entry: it goes.
  await pruneLogs(s.pdb, "000000000000", 96);
  assert.deepEqual(s.left(), {
    rows: [],
    blocks: [blocks[1].lo, blocks[2].lo].sort(),
  });
});
