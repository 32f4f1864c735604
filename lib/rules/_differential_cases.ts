/**
 * Deterministic random cases for the rule differential test
 * (`differential_test.ts`): a table of records with awkward values, auth
 * scopes, a request, and random rule expressions over them. Test support only.
 *
 * Over 350 lines, one idea: the generator's tables of awkward values and
 * rule shapes read best side by side with the generator that draws them.
 *
 * @module
 */

import { coveringValues, jsonAtom, jsonValue } from "./_differential_json.ts";

/** A record as the evaluator sees it (decoded values). */
type Row = Record<string, unknown>;

/**
 * Everything the differential test runs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import {
 *   type DifferentialCases,
 *   differentialCases,
 * } from "moonbase/lib/rules/_differential_cases.ts";
 * const cases: DifferentialCases = differentialCases(1, 3);
 * assert.equal(cases.sources.length, 3);
 * assert.equal(new Set(cases.rows.map((r) => r.id)).size, cases.rows.length);
 * ```
 */
export interface DifferentialCases {
  /** Declared field type of each column (besides `id`, a string). */
  readonly types: Readonly<Record<string, string>>;
  /** Records, each with a unique `id`. */
  readonly rows: readonly Row[];
  /** `auth` scopes (guest, user, admin). */
  readonly auths: readonly { readonly id: string }[];
  /** The `req` scope. */
  readonly req: unknown;
  /** Rule-mode expressions reading `record.*`, `auth.*` and `req.*`. */
  readonly sources: readonly string[];
}

/** mulberry32: a small deterministic PRNG. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
let rand = prng(0);
const pick = <T>(items: readonly T[]): T =>
  items[Math.floor(rand() * items.length)];
const chance = (p: number) => rand() < p;

const TYPES: Readonly<Record<string, string>> = {
  s: "string",
  s2: "string",
  i: "int",
  f: "double",
  b: "bool",
  dt: "date",
  j: "json",
  rel: "relation[]",
};
const TEXT = ["s", "s2", "dt"];
const NUMBER = ["i", "f"];
const STRINGS = [
  ..."|a|A|b|ab|abc|abd|5|05|5.0| 5 |-3|1e3|0x10|Infinity|NaN|true|null".split(
    "|",
  ),
  ..."ÀB|é|😀|a😀|\ue000|\uffff|%|_|a%b|a_b|\\|'|\"| |u1|Ann".split("|"),
  "2026-01-02T03:04:05.000Z",
];
const DATES = [
  "2025-12-31T23:59:59.999Z",
  "2026-01-02T03:04:05.000Z",
  "2026-01-02T03:04:05.001Z",
  "2030-06-15T00:00:00.000Z",
];
const MAX = Number.MAX_SAFE_INTEGER;
const INTS = [0, 1, -1, 2, 5, 10, 42, -42, 100, MAX, -MAX];
const DOUBLES = [
  ...[0, -0, 0.5, -0.5, 1, 1.5, 2.5, 5, 3.14],
  ...[1e20, -1e-7, 1e308, Infinity, -Infinity],
];

/** Ids a multiple relation (`rel`) may hold. */
const REL_IDS = ["u1", "5", "a", "A", "😀", "é", "r001", "0190-x"];

/** A multiple relation's stored list: distinct ids in any order, or [] (never null once written). */
function relIds(): string[] {
  const out: string[] = [];
  const n = Math.floor(rand() * 5);
  for (let k = 0; k < n; k++) {
    const id = pick(REL_IDS);
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

function makeRows(): Row[] {
  const rows: Row[] = [
    {
      s: null,
      s2: null,
      i: null,
      f: null,
      b: null,
      dt: null,
      j: null,
      rel: null,
    },
    { s: "", s2: "", i: 0, f: 0, b: false, dt: DATES[0], j: {}, rel: [] },
    {
      s: "5",
      s2: "5",
      i: 5,
      f: 5,
      b: true,
      dt: DATES[1],
      j: { a: "u1" },
      rel: ["u1"],
    },
    {
      s: "u1",
      s2: "a",
      i: -1,
      f: -0,
      b: null,
      dt: DATES[2],
      j: { a: 5 },
      rel: ["5", "a"],
    },
  ];
  while (rows.length < 50) {
    const maybe = <T>(v: T) => (chance(0.15) ? null : v);
    rows.push({
      s: maybe(pick(STRINGS)),
      s2: maybe(pick(STRINGS)),
      i: maybe(pick(INTS)),
      f: maybe(pick(DOUBLES)),
      b: maybe(chance(0.5)),
      dt: maybe(pick(DATES)),
      j: jsonValue(pick, chance),
      rel: relIds(),
    });
  }
  for (const j of coveringValues()) {
    rows.push({
      s: null,
      s2: null,
      i: null,
      f: null,
      b: null,
      dt: null,
      j,
      rel: relIds(),
    });
  }
  return rows.map((r, n) => ({ id: `r${String(n).padStart(3, "0")}`, ...r }));
}

const AUTHS = [
  { id: "", entity: "users", type: "guest", user: null },
  {
    id: "u1",
    entity: "users",
    type: "user",
    user: {
      id: "u1",
      name: "Ann",
      age: 30,
      score: 2.5,
      tags: ["a", "5", null, "😀"],
      nums: [5, -1, 0.5],
      flags: [true],
    },
  },
  {
    id: "5",
    entity: "users",
    type: "admin",
    user: {
      id: "5",
      name: "",
      age: "10",
      score: null,
      tags: [],
      nums: [],
      flags: [false, true],
    },
  },
];
const REQ = {
  method: "GET",
  body: { x: "a", n: 5, s: "5", list: ["abc", 1, null] },
  query: { q: "ab" },
};

const literal = (v: unknown): string => {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "(0 / 0)";
    if (v === Infinity) return "1e309";
    if (v === -Infinity) return "-1e309";
    return Object.is(v, -0) ? "-0" : String(v);
  }
  return String(v);
};

const AUTH_VALUES = [
  "auth.id",
  "auth.user.name",
  "auth.user.age",
  "auth.user.score",
  "auth.user.missing",
  "auth.user",
  "auth.type",
];
const REQ_VALUES = [
  "req.body.x",
  "req.body.n",
  "req.body.s",
  "req.query.q",
  "req.body.list",
];
const ARRAYS = [
  "auth.user.tags",
  "auth.user.nums",
  "auth.user.flags",
  "req.body.list",
  "auth.user",
];

/** A value known at request time, biased toward the family of `column`. */
function constant(column: string): string {
  const r = rand();
  if (r < 0.15) return pick(AUTH_VALUES);
  if (r < 0.22) return pick(REQ_VALUES);
  if (r < 0.27) {
    return pick([
      "null",
      "undefined",
      "true",
      "false",
      "(0 / 0)",
      "'a' + 'b'",
      "2 * 3",
      "-5",
    ]);
  }
  if (TEXT.includes(column)) {
    return literal(
      chance(0.8)
        ? pick(column === "dt" ? [...DATES, ...STRINGS] : STRINGS)
        : pick(INTS),
    );
  }
  if (NUMBER.includes(column)) {
    return literal(chance(0.75) ? pick([...INTS, ...DOUBLES]) : pick(STRINGS));
  }
  return literal(chance(0.6) ? chance(0.5) : pick([0, 1, 2, "1", "", "true"]));
}

/** Columns of the generic atoms (the multiple relation has atoms of its own). */
const COLUMNS = Object.keys(TYPES).filter((c) => c !== "rel");
const column = (names = COLUMNS) => `record.${pick(names)}`;
const COMPARE = ["==", "!=", "===", "!==", "<", "<=", ">", ">="];

function comparison(): string {
  const c = column();
  const k = constant(c.slice(7));
  return chance(0.8)
    ? `${c} ${pick(COMPARE)} ${k}`
    : `${k} ${pick(COMPARE)} ${c}`;
}

/** Constants for arithmetic: exact, huge, tiny, non-numbers. */
const ARITH_CONSTANTS = [
  ..."0|1|2|3|-1|7|-7|0.5|0.1|1.2|-2.5|1e-7|1e20|1e300|1e308|5e-324".split("|"),
  ..."-0|(0 / 0)|1e309|null|undefined|true|'5'|' 3 '|'a'|9007199254740991"
    .split(
      "|",
    ),
];

/** A number computed from columns: lengths, arithmetic, unary minus. */
function numeric(depth: number): string {
  const r = rand();
  if (depth <= 0 || r < 0.3) {
    return chance(0.5)
      ? `record.${pick(TEXT)}.length`
      : `record.${pick([...NUMBER, ...NUMBER, "b", "s"])}`;
  }
  if (r < 0.4) return `-${numeric(depth - 1)}`;
  const op = pick(["+", "-", "*", "/", "%", "+", "*"]);
  const other = chance(0.75) ? pick(ARITH_CONSTANTS) : numeric(depth - 1);
  return chance(0.7)
    ? `(${numeric(depth - 1)} ${op} ${other})`
    : `(${other} ${op} ${numeric(depth - 1)})`;
}

function numericAtom(): string {
  const k = chance(0.2)
    ? pick(ARITH_CONSTANTS)
    : literal(pick([...INTS, ...DOUBLES, 3, 4, 7, 0.25]));
  const r = rand();
  if (r < 0.7) return `${numeric(2)} ${pick(COMPARE)} ${k}`;
  if (r < 0.8) return `${numeric(1)} ${pick(COMPARE)} ${numeric(1)}`;
  if (r < 0.9) return `${pick(ARRAYS)}.includes(${numeric(1)})`;
  return chance(0.5) ? numeric(2) : `!${numeric(1)}`;
}

/** `.includes` and `.length` of the multiple relation `rel`. */
function relAtom(): string {
  const r = rand();
  if (r < 0.4) {
    const arg = chance(0.6)
      ? literal(pick([...REL_IDS, "", "u"]))
      : pick([...AUTH_VALUES, "req.body.x", "5", "null", "undefined"]);
    return `record.rel.includes(${arg})`;
  }
  const k = literal(pick([0, 1, 2, 3, 4, -1, 0.5, "1", "", "a"]));
  if (r < 0.8) return `record.rel.length ${pick(COMPARE)} ${k}`;
  if (r < 0.9) return chance(0.5) ? "record.rel.length" : "!record.rel.length";
  return `(record.rel.length ${pick(["+", "-", "*", "%"])} ${
    literal(pick(INTS))
  }) ${pick(COMPARE)} ${k}`;
}

function atom(): string {
  if (chance(0.12)) return relAtom();
  if (chance(0.3)) return jsonAtom(pick, chance);
  if (chance(0.3)) return numericAtom();
  const r = rand();
  if (r < 0.4) return comparison();
  if (r < 0.5) return `${column()} ${pick(COMPARE)} ${column()}`;
  if (r < 0.6) {
    const arg = chance(0.8) ? literal(pick(STRINGS)) : constant("s");
    return `${column(chance(0.9) ? TEXT : NUMBER)}.${
      pick(["includes", "startsWith", "endsWith"])
    }(${arg})`;
  }
  if (r < 0.67) return `${pick(ARRAYS)}.includes(${column()})`;
  if (r < 0.77) return chance(0.5) ? column() : `!${column()}`;
  if (r < 0.85) {
    return chance(0.5)
      ? `(${comparison()}) ${pick(COMPARE)} ${
        pick(["true", "false", "1", "0", "null"])
      }`
      : `(${comparison()}) ${pick(COMPARE)} (${comparison()})`;
  }
  if (r < 0.9) {
    return `${column(NUMBER)} ${pick(["+", "-", "*", "%"])} ${
      literal(pick(INTS))
    } > ${literal(pick(INTS))}`;
  }
  if (r < 0.95) {
    return `(${column()} ${pick(["||", "&&"])} ${constant("s")}) == ${
      constant("s")
    }`;
  }
  return `${pick(AUTH_VALUES)} ${pick(COMPARE)} ${literal(pick(STRINGS))}`;
}

function expression(depth: number): string {
  const r = rand();
  if (depth <= 0 || r < 0.45) return atom();
  if (r < 0.7) return `(${expression(depth - 1)} && ${expression(depth - 1)})`;
  if (r < 0.9) return `(${expression(depth - 1)} || ${expression(depth - 1)})`;
  return `!(${expression(depth - 1)})`;
}

/**
 * Generates the cases; the same `seed` always gives the same cases.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { differentialCases } from "moonbase/lib/rules/_differential_cases.ts";
 * const a = differentialCases(1, 5);
 * assert.equal(a.sources.length, 5);
 * assert.deepEqual(differentialCases(1, 5), a); // deterministic for a seed
 * ```
 */
export function differentialCases(
  seed: number,
  count: number,
): DifferentialCases {
  rand = prng(seed);
  const rows = makeRows();
  const sources = Array.from({ length: count }, () => expression(2));
  return { types: TYPES, rows, auths: AUTHS, req: REQ, sources };
}

/**
 * The records with a relation `p` to records of the same table (the test's
 * entity `t`): most point at another record, some at none, some at an id
 * no record has (read as no record, like none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { differentialCases, withParents } from "moonbase/lib/rules/_differential_cases.ts";
 * const rows = withParents(differentialCases(1, 1).rows);
 * assert.ok(rows.some((r) => r.p === null) && rows.some((r) => r.p === "gone"));
 * ```
 */
export function withParents(rows: readonly Row[]): Row[] {
  const n = rows.length;
  const id = (m: number) => String(rows[m % n].id);
  return rows.map((r, k) => ({
    ...r,
    p: k % 5 === 0
      ? null
      : k % 11 === 0
      ? "gone"
      : String(rows[(k * 7 + 3) % n].id),
    // A multiple relation to the table itself: 0 to 3 ids, one maybe gone.
    q: k % 6 === 0
      ? []
      : k % 7 === 0
      ? [id(k * 5 + 1), "gone"]
      : [id(k * 3 + 2), id(k * 5 + 1), id(k + 4)].slice(0, 1 + (k % 3))
        .filter((x, i, all) => all.indexOf(x) === i),
  }));
}

/**
 * Rule sources reading through the multiple relation `q` (a list of ids of
 * the table's own rows) forward: `.some`/`.every` over its records, from
 * the record and one relation away, nested, and beside `.length` (the ids
 * it holds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manySources } from "moonbase/lib/rules/_differential_cases.ts";
 * assert.deepEqual(manySources(["record.i > 1"]), ["record.q.some(c => c.i > 1)"]);
 * ```
 */
export function manySources(sources: readonly string[]): string[] {
  return sources.map((src, k) => {
    const over = (v: string) => src.replaceAll("record.", `${v}.`);
    switch (k % 5) {
      case 0:
        return `record.q.some(c => ${over("c")})`;
      case 1:
        return `record.q.every(c => ${over("c")})`;
      case 2:
        return `record.p.q.some(c => (${over("c")}) && c.id != record.id)`;
      case 3:
        return `record.q.some(c => c.q.every(d => ${over("d")}))`;
      default:
        return `(record.q.length > 1) == record.q.some(c => c.p.t_via_p.some(d => ${
          over("d")
        }))`;
    }
  });
}

/**
 * Rule sources reading through the relation `p` and the back-relation
 * `t_via_p` (the records whose `p` points here), made from `sources` (rule
 * mode, `record.*`): the same conditions one and two relations away, over
 * a back-relation's records with `.some`/`.every` (the outer record in
 * reach), and beside `.length`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relationSources } from "moonbase/lib/rules/_differential_cases.ts";
 * assert.deepEqual(relationSources(["record.i > 1"]), ["record.p.i > 1"]);
 * ```
 */
export function relationSources(sources: readonly string[]): string[] {
  return sources.map((src, k) => {
    const over = (v: string) => src.replaceAll("record.", `${v}.`);
    switch (k % 7) {
      case 0:
        return over("record.p");
      case 1:
        return over("record.p.p");
      case 2:
        return `record.t_via_p.some(c => ${over("c")})`;
      case 3:
        return `record.t_via_p.every(c => ${over("c")})`;
      case 4:
        return `(record.t_via_p.length > 1) == (${src})`;
      case 5:
        return `record.p.t_via_p.some(c => (${
          over("c")
        }) && c.id != record.id)`;
      default:
        return `!(${over("record.p")}) || record.p.p.t_via_p.length == 0`;
    }
  });
}
