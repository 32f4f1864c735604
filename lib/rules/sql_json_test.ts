/**
 * The storage assumption of sql_json.ts on SQLite: a JSON number written by
 * JSON.stringify reads back (`->>`) as the very double JSON.parse gives.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { compareJson } from "./sql_json.ts";
import { jsonMember } from "./sql_json_path.ts";

/** mulberry32, for reproducible bit patterns. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("sql_json: SQLite reads JSON.stringify's numbers to the same doubles", () => {
  const db = new DatabaseSync(":memory:");
  const read = db.prepare("SELECT CAST(? ->> '$.a' AS REAL) = ? AS same");
  const rand = prng(7);
  const bits = new Float64Array(1);
  const words = new Uint32Array(bits.buffer);
  const values = [
    0.1,
    0.2,
    0.3,
    1 / 3,
    5e-324,
    2.2250738585072014e-308,
    1e-300,
    1e300,
    1.7976931348623157e308,
    2 ** 53,
    2 ** 53 + 2,
    2 ** 63,
    2 ** 64,
    1e21,
    123456789012345680000,
    9007199254740993,
    0.1 + 0.2,
    4.35,
    2.675,
    23193437918487570, // its shortest form is not the double's exact value
  ];
  for (let i = 0; i < 50_000; i++) {
    words[0] = rand() * 2 ** 32;
    words[1] = rand() * 2 ** 32;
    if (Number.isFinite(bits[0])) values.push(bits[0]);
  }
  let differ = 0;
  for (const v of values) {
    for (const x of [v, -v]) {
      // Integer text within ±2^63 is read as an exact integer, then rounded.
      const row = read.get(JSON.stringify({ a: x }), x);
      if (row?.same !== 1) differ++;
    }
  }
  db.close();
  assert.equal(differ, 0);
});

Deno.test("sql_json: keys that are not plain names are not compiled", () => {
  const root = { column: '"m"', path: [] };
  for (const key of ["length", "__proto__", "0", "a b", "a'b", 'a"b', ""]) {
    assert.throws(() => jsonMember(root, key), /json key/);
  }
  assert.deepEqual(jsonMember(root, "$a_1").path, ["$a_1"]);
});

Deno.test("sql_json: strict comparisons are exact, loose ones leave arrays and objects unsure", () => {
  const ref = { column: '"m"', path: ["a"] };
  for (const d of ["sqlite", "postgres"] as const) {
    assert.equal(compareJson("===", ref, "x", d).unsure, false);
    assert.equal(compareJson("!=", ref, null, d).unsure, false);
    const loose = compareJson("==", ref, "x", d).unsure;
    assert.ok(typeof loose !== "boolean" && /array/.test(loose.sql));
    // Number(string) has no SQL equivalent: strings are unsure against numbers.
    const n = compareJson("<", ref, 5, d).unsure;
    assert.ok(typeof n !== "boolean" && /(text|string)/.test(n.sql));
    // === with an object or a non-finite number never holds for a JSON value.
    assert.equal(compareJson("===", ref, {}, d).cond, false);
    assert.equal(compareJson("===", ref, Infinity, d).cond, false);
  }
});
