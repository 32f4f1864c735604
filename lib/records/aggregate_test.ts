/**
 * Unit tests of the aggregate SQL below HTTP: the date buckets SQLite
 * computes (the same SQL PostgreSQL runs; tests/aggregate_test.ts checks
 * both) against JavaScript's `Date` for every day of several years, week
 * boundaries and the calendar's ends; `dayText`; the 400s of `sqlOnly`.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { bucketSql, dayText, rounded, sqlOnly } from "./aggregate.ts";
import { sqliteDialect } from "../db/sqlite_dialect.ts";
import { MoonbaseError } from "../errors.ts";

const DAY = 86_400_000;

/** The Monday (YYYY-MM-DD, UTC) of the ISO week of `ms`, by `Date`. */
function mondayOf(ms: number): string {
  const midnight = Math.floor(ms / DAY) * DAY;
  const back = (new Date(midnight).getUTCDay() + 6) % 7;
  return new Date(midnight - back * DAY).toISOString().slice(0, 10);
}

function buckets(values: (string | null)[]): Record<string, unknown>[] {
  const db = new DatabaseSync(":memory:");
  try {
    db.exec(`CREATE TABLE t (v TEXT)`);
    const ins = db.prepare("INSERT INTO t (v) VALUES (?)");
    for (const v of values) ins.run(v);
    const cols = (["day", "week", "month", "year"] as const)
      .map((b) => `${bucketSql(sqliteDialect, '"v"', b)} AS ${b}`);
    return db.prepare(`SELECT v, ${cols.join(", ")} FROM t ORDER BY rowid`)
      .all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

Deno.test("aggregate buckets: every day of 1968-1972 and 2023-2029", () => {
  const values: string[] = [];
  for (const [from, to] of [[1968, 1973], [2023, 2030]]) {
    for (let t = Date.UTC(from, 0, 1); t < Date.UTC(to, 0, 1); t += DAY) {
      values.push(new Date(t).toISOString());
      values.push(new Date(t + DAY - 1).toISOString()); // the day's last ms
    }
  }
  const rows = buckets(values);
  for (const r of rows) {
    const v = String(r.v), t = Date.parse(v);
    assert.equal(r.day, v.slice(0, 10), v);
    assert.equal(dayText(Number(r.week)), mondayOf(t), v);
    assert.equal(r.month, v.slice(0, 7), v);
    assert.equal(r.year, v.slice(0, 4), v);
  }
});

Deno.test("aggregate buckets: the calendar's ends, leap days, non-dates", () => {
  const rows = buckets([
    "0000-01-01T00:00:00.000Z",
    "0000-03-06T00:00:00.000Z",
    "1600-02-29T12:00:00.000Z",
    "1900-03-01T00:00:00.000Z",
    "2000-02-29T23:59:59.999Z",
    "9999-12-31T23:59:59.999Z",
    null,
    "not a date",
    "",
  ]);
  assert.deepEqual(rows.map((r) => dayText(Number(r.week))).slice(0, 6), [
    "-0001-12-27",
    "0000-03-06",
    "1600-02-28",
    "1900-02-26",
    "2000-02-28",
    "9999-12-27",
  ]);
  for (const r of rows.slice(6)) {
    assert.deepEqual([r.day, r.week, r.month, r.year], [
      null,
      null,
      null,
      null,
    ]);
  }
});

Deno.test("aggregate: dayText and rounded", () => {
  assert.equal(dayText(0), "1970-01-01");
  assert.equal(dayText(-1), "1969-12-31");
  assert.equal(dayText(Date.UTC(2026, 10, 23) / DAY), "2026-11-23");
  assert.equal(rounded(0.1 + 0.2), 0.3);
  assert.equal(rounded(1 / 3), 0.333333333333);
});

Deno.test("aggregate: a per-row check is refused, SQL kept", () => {
  const where = { sql: "a = ?", params: [1] };
  assert.equal(sqlOnly({ where }), where);
  assert.equal(sqlOnly({}), undefined);
  assert.throws(
    () => sqlOnly({ where, keep: () => true }),
    (e) => e instanceof MoonbaseError && /checked row by row/.test(e.message),
  );
});
