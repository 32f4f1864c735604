/**
 * Pruning the log store: entries older than a floor go, then everything
 * beyond the newest `maxRows` entries, counting the rows of `mb_logs` and
 * the entries of `mb_log_blocks` together. Blocks go whole: one is deleted
 * once the entries newer than its newest one already fill `maxRows`. Rows
 * as new as the oldest kept block stay (up to `maxRows` of them), so what
 * is kept past the limit is at most the block the limit falls in and the
 * rows among its entries. Where the blocks of several processes
 * (`--workers`, instances on one PostgreSQL database) overlap in time, a
 * block is charged only with its entries newer than the block it is
 * weighed against (the overlapping blocks are read to count them), so the
 * cut falls where the newest `maxRows` end, as with one process.
 * Rows written while a prune runs (PostgreSQL: no one transaction) are
 * never counted nor cut: the prune sees the rows up to the newest at its
 * start. Written once for the SQLite writer thread (synchronous
 * calls) and PostgreSQL (promises).
 *
 * @module
 */

import { decodeBlock } from "./block_view.ts";

/** What pruning needs of a database (sync or async). */
export interface PruneDb {
  all(
    sql: string,
    params: (string | number)[],
  ): Record<string, unknown>[] | Promise<Record<string, unknown>[]>;
  run(sql: string, params: (string | number)[]): unknown;
}

/**
 * Deletes entries whose ids sort before `floor` and beyond the newest
 * `maxRows`.
 */
export async function pruneLogs(
  db: PruneDb,
  floor: string,
  maxRows: number,
): Promise<void> {
  await db.run(`DELETE FROM "mb_logs" WHERE "id" < ?`, [floor]);
  await db.run(`DELETE FROM "mb_log_blocks" WHERE "hi" < ?`, [floor]);
  // No count limit (Infinity), or none that can be read (NaN): age only.
  if (!Number.isFinite(maxRows)) return;
  const max = Math.max(0, Math.floor(maxRows));
  const newest = await db.all(
    `SELECT "id" FROM "mb_logs" ORDER BY "id" DESC LIMIT 1`,
    [],
  );
  // Rows up to this one: later ones (another connection's) stay out.
  const top = newest[0] ? String(newest[0].id) : "";
  const blocks = await db.all(
    `SELECT "lo", "hi", "n" FROM "mb_log_blocks" ORDER BY "hi" DESC`,
    [],
  );
  // A stored count that is not a count weighs nothing (never NaN in SQL).
  const size = (b: Record<string, unknown>) =>
    Math.max(0, Math.floor(Number(b.n))) || 0;
  // before[k]: the entries of the blocks newer than block k (by their
  // newest); firstLo[k]: the oldest entry of blocks 0 to k.
  const before: number[] = [0], firstLo: string[] = [];
  for (const b of blocks) {
    const k = before.length - 1;
    firstLo.push(
      k === 0 || String(b.lo) < firstLo[k - 1] ? String(b.lo) : firstLo[k - 1],
    );
    before.push(before[k] + size(b));
  }
  // The ids of a block, read once (an overlapping block's); none: damaged
  // (it counts whole, as readers skip it whole).
  const ids = new Map<number, string[] | null>();
  const idsOf = async (j: number) => {
    if (!ids.has(j)) {
      const r = await db.all(
        `SELECT "data" FROM "mb_log_blocks" WHERE "lo" = ?`,
        [String(blocks[j].lo)],
      );
      const v = r[0] ? decodeBlock(r[0].data) : undefined;
      ids.set(j, v ? Array.from({ length: v.rows }, (_, i) => v.id(i)) : null);
    }
    return ids.get(j)!;
  };
  // newer(k): the blocks' entries newer than block k's newest one; it grows
  // with k. A newer block that began before it (another process's, in the
  // same time) counts only its entries past that one.
  const newer = async (k: number) => {
    const hi = String(blocks[k].hi);
    let n = before[k];
    if (k === 0 || firstLo[k - 1] > hi) return n;
    for (let j = 0; j < k; j++) {
      if (String(blocks[j].lo) > hi) continue;
      const own = await idsOf(j);
      if (own) n -= size(blocks[j]) - own.filter((id) => id > hi).length;
    }
    return n;
  };
  const rowsFrom = async (op: ">" | ">=", id: unknown) => {
    const r = await db.all(
      `SELECT COUNT(*) AS "c" FROM (SELECT 1 FROM "mb_logs" WHERE "id" ${op} ? AND "id" <= ? LIMIT ${max}) AS "t"`,
      [String(id), top],
    );
    return Number(r[0].c);
  };
  // The first block past the limit (binary search: log₂ of the blocks' count queries).
  let lo = 0, hi = blocks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (await rowsFrom(">", blocks[mid].hi) + await newer(mid) >= max) {
      hi = mid;
    } else lo = mid + 1;
  }
  if (lo < blocks.length) {
    await db.run(`DELETE FROM "mb_log_blocks" WHERE "hi" <= ?`, [
      String(blocks[lo].hi),
    ]);
  }
  // Rows as new as the oldest kept block stay; older ones fill what is left.
  let keep = max;
  if (lo > 0) {
    let oldest = String(blocks[0].lo);
    for (let k = 1; k < lo; k++) {
      if (String(blocks[k].lo) < oldest) oldest = String(blocks[k].lo);
    }
    keep = Math.max(await rowsFrom(">=", oldest), max - before[lo]);
  }
  const last = await db.all(
    `SELECT "id" FROM "mb_logs" WHERE "id" <= ? ORDER BY "id" DESC LIMIT 1 OFFSET ${keep}`,
    [top],
  );
  if (last[0]) {
    await db.run(`DELETE FROM "mb_logs" WHERE "id" <= ?`, [
      String(last[0].id),
    ]);
  }
}
