import assert from "node:assert/strict";
import { DbClock } from "./db_clock.ts";
import type { Storage } from "./storage.ts";

/** A database answering `answers` in turn; each query advances the local clock by its delay. */
function fakeDb(
  name: "postgres" | "sqlite",
  answers: { ms: number; delay: number }[],
  local: { t: number },
): Storage & { calls: number } {
  const db = {
    calls: 0,
    dialect: { name },
    query: () => {
      const a = answers[db.calls++ % answers.length];
      local.t += a.delay / 2;
      const ms = a.ms;
      local.t += a.delay / 2;
      return Promise.resolve([{ ms: String(ms) }]);
    },
  };
  return db as unknown as Storage & { calls: number };
}

Deno.test("db clock: the offset is the midpoint of the shortest round trip", async () => {
  const local = { t: 1_000_000 };
  // A database 30 s behind; the second round trip is the shortest (2 ms).
  const db = fakeDb("postgres", [
    { ms: 970_100, delay: 400 }, // answered late in a slow trip: skews
    { ms: 970_401, delay: 2 },
    { ms: 970_500, delay: 100 },
  ], local);
  const clock = new DbClock(db, () => local.t);
  await clock.measure();
  assert.equal(db.calls, 3);
  assert.equal(clock.offset, -30_000);
  assert.equal(clock.now(), local.t - 30_000);
});

Deno.test("db clock: a failed measurement keeps the last offset", async () => {
  const local = { t: 5_000 };
  let down = false;
  const db = {
    dialect: { name: "postgres" },
    query: () =>
      down
        ? Promise.reject(new Error("down"))
        : Promise.resolve([{ ms: local.t + 10_000 }]),
  } as unknown as Storage;
  const clock = new DbClock(db, () => local.t);
  await clock.measure();
  assert.equal(clock.offset, 10_000);
  down = true;
  await assert.rejects(clock.measure());
  assert.equal(clock.offset, 10_000);
});

Deno.test("db clock: SQLite is one process, one clock (no query, offset 0)", async () => {
  const local = { t: 42 };
  const db = fakeDb("sqlite", [{ ms: 99_999, delay: 0 }], local);
  const clock = new DbClock(db, () => local.t);
  await clock.start();
  clock.close();
  assert.equal(db.calls, 0);
  assert.equal(clock.now(), 42);
});
