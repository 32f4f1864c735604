import { assertEquals } from "../../tests/_server.ts";
import { rowDecoder, rowMaker } from "./shapes.ts";

const NAMES = [
  "id",
  'we"ird',
  "back\\slash",
  "line\u2028sep",
  "ünï",
  "constructor",
  "a b;}) + (globalThis.x = 1",
];

Deno.test("rowMaker: any column name is a plain own property", () => {
  const row = rowMaker(NAMES)(NAMES.map((_, i) => i));
  assertEquals(Object.keys(row), NAMES);
  assertEquals(NAMES.map((n) => row[n]), NAMES.map((_, i) => i));
  assertEquals(
    (globalThis as Record<string, unknown>).x,
    undefined,
    "a name is never code",
  );
});

Deno.test("rowMaker: __proto__ is a column, not the prototype", () => {
  const row = rowMaker(["__proto__", "b"])([{ polluted: true }, 2]);
  assertEquals(Object.getPrototypeOf(row), Object.prototype);
  assertEquals(Object.hasOwn(row, "__proto__"), true);
  assertEquals((row as { polluted?: boolean }).polluted, undefined);
  assertEquals(row.b, 2);
});

Deno.test("rowMaker: a repeated name keeps the last value (as a loop would)", () => {
  assertEquals(rowMaker(["id", "id"])([1, 2]), { id: 2 });
});

Deno.test("rowDecoder: decodes each column; a missing column gives undefined", () => {
  const plan = NAMES.map((n, i) =>
    [`f${i}`, n, i % 2 ? "int" : "text"] as const
  );
  const decode = rowDecoder(plan);
  const seen: string[] = [];
  const d = {
    decode(kind: string, v: unknown) {
      seen.push(kind);
      return kind === "int" ? Number(v) * 10 : v;
    },
  };
  const row = Object.fromEntries(NAMES.map((n, i) => [n, String(i)]));
  assertEquals(
    decode(row, d),
    Object.fromEntries(
      NAMES.map((_, i) => [`f${i}`, i % 2 ? i * 10 : String(i)]),
    ),
  );
  assertEquals(seen.length, NAMES.length);
  const { id: _gone, ...partial } = row;
  assertEquals(decode(partial, d), undefined);
  assertEquals(decode({ ...row, id: null }, d)?.f0, null, "null is a value");
});

Deno.test("rowDecoder: a column named like an Object member must be the row's own", () => {
  const decode = rowDecoder([["c", "constructor", "text"], [
    "t",
    "toString",
    "text",
  ]]);
  const d = { decode: (_k: string, v: unknown) => v };
  assertEquals(decode({ constructor: "x", toString: "y" }, d), {
    c: "x",
    t: "y",
  });
  assertEquals(decode({ toString: "y" }, d), undefined, "constructor missing");
  assertEquals(
    rowDecoder([["__proto__", "p", "text"]])({ p: 1 }, d),
    undefined,
  );
});
