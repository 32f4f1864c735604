/**
 * JSON values and expressions for the rule differential test
 * (`_differential_cases.ts`): every JSON type at the paths the expressions
 * read, with the values JavaScript converts in surprising ways. Test support
 * only.
 *
 * @module
 */

/** Values found at `j.a` and `j.b.c` (and as the whole of `j`). */
export const JSON_LEAVES: readonly unknown[] = [
  ...["", "x", "a", "A", "u1", "5", " 12 ", "0x10", "1e3", "0", "-0", "true"],
  ...["null", "[object Object]", "a,b", "é", "😀", "a😀", "\uffff", "u1,"],
  ...[0, 1, -1, 5, 12, 16, 1000, 0.5, 0.1, 1e300, -1e-7, 5e-324, 2 ** 53],
  ...[
    2 ** 53 + 2,
    23193437918487570,
    -3462680634043049500,
    1e21,
    123456789012345680000,
    -1.7976931348623157e308,
  ],
  ...[true, false, null],
  ...[[], ["x"], [7], ["a", "b"], [["u1"]], [null], [5], ["5"], ["u1"], [0]],
  ...[[true], [{}], [[]], ["x", ["y"]]],
  ...[{}, { toString: 1 }, { a: 1 }, { valueOf: 2 }, { x: "u1" }, { c: "x" }],
  ...[{ toString: "u1" }, { length: 3 }],
];

/** A record's `j`: an object holding leaves, sometimes a leaf itself, or null. */
export function jsonValue(
  pick: <T>(items: readonly T[]) => T,
  chance: (p: number) => boolean,
): unknown {
  if (chance(0.1)) return null;
  if (chance(0.15)) return pick(JSON_LEAVES);
  const j: Record<string, unknown> = {};
  if (chance(0.85)) j.a = pick(JSON_LEAVES);
  if (chance(0.6)) {
    j.b = chance(0.8) ? { c: pick(JSON_LEAVES) } : pick(JSON_LEAVES);
  }
  return j;
}

/** Rows covering every leaf at `j.a` once, then at `j.b.c`, then as `j`. */
export function coveringValues(): unknown[] {
  return [
    ...JSON_LEAVES.map((a) => ({ a })),
    ...JSON_LEAVES.map((c) => ({ b: { c } })),
    ...JSON_LEAVES,
  ];
}

const PATHS = ["record.j", "record.j.a", "record.j.a", "record.j.b.c"];
const ODD_PATHS = [
  "record.j.b",
  "record.j.a.c",
  'record.j["a"]',
  "record.j.a.length",
  "record.j.a[0]",
  "record.j.toString",
  "record.j.c",
];
const CONSTANTS = [
  ...['""', '"x"', '"a"', '"u1"', '"5"', '" 12 "', '"0x10"', '"0"', '"true"'],
  ...['"[object Object]"', '"a,b"', '"é"', '"😀"', '"b"', '"null"', '"1e3"'],
  ...[
    "0",
    "-0",
    "1",
    "5",
    "12",
    "16",
    "0.5",
    "0.1",
    "1e300",
    "-1e-7",
    "5e-324",
  ],
  ...[
    "9007199254740992",
    "9007199254740993",
    "23193437918487570",
    "23193437918487568",
    "1e21",
    "1e309",
    "-1e309",
  ],
  ...["(0 / 0)", "true", "false", "null", "undefined", "auth.id", "auth.user"],
  ...["auth.user.tags", "auth.user.age", "auth.user.missing", "req.body.list"],
];
const COMPARE = ["==", "!=", "===", "!==", "<", "<=", ">", ">="];

/** A random expression reading the json field. */
export function jsonAtom(
  pick: <T>(items: readonly T[]) => T,
  chance: (p: number) => boolean,
): string {
  const path = chance(0.9) ? pick(PATHS) : pick(ODD_PATHS);
  const r = chance(0.6) ? 0 : chance(0.5) ? 1 : 2;
  if (r === 0) {
    const k = pick(CONSTANTS);
    return chance(0.85)
      ? `${path} ${pick(COMPARE)} ${k}`
      : `${k} ${pick(COMPARE)} ${path}`;
  }
  if (r === 1) return chance(0.5) ? path : `!${path}`;
  return `${path}.includes(${
    pick([
      '"x"',
      '"u1"',
      "5",
      "0",
      "null",
      "true",
      '""',
      '"a"',
      "auth.id",
      "-0",
    ])
  })`;
}
