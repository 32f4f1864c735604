/**
 * Row objects built by code made once per column list. V8 gives every object
 * made by one object literal the same hidden class; a loop that stores values
 * under variable names runs about ten times slower, and its objects serialize
 * slower too. Names are written as JSON string literals, so any column name is
 * safe to put in the generated code.
 *
 * @module
 */

/** Makes an object from values in column order. */
export type RowMaker = (values: readonly unknown[]) => Record<string, unknown>;

/**
 * The object maker for a column list (a plain loop when a name could not be
 * an own property of an object literal).
 *
 * @example
 * ```ts
 * import { rowMaker } from "moonbase/lib/db/shapes.ts";
 * const make = rowMaker(["id", "title"]);
 * const row = make(["a1", "Hello"]);
 * console.assert(row.id === "a1" && row.title === "Hello");
 * ```
 */
export function rowMaker(names: readonly string[]): RowMaker {
  if (names.includes("__proto__")) {
    return (values) => {
      const row: Record<string, unknown> = {};
      for (let i = 0; i < names.length; i++) {
        Object.defineProperty(row, names[i], {
          value: values[i],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return row;
    };
  }
  const fields = names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`);
  return new Function("v", `return {${fields.join(", ")}};`) as RowMaker;
}

/**
 * Makes `{[name]: decoder.decode(kind, row[column])}` for each entry of `plan`, or
 * undefined when the row lacks one of the columns.
 */
export type RowDecoder<K extends string> = (
  row: Record<string, unknown>,
  decoder: { decode(kind: K, value: unknown): unknown },
) => Record<string, unknown> | undefined;

/**
 * The decoder for a plan of `[name, column, kind]` (names other than
 * `__proto__`; callers keep a slower path for that).
 *
 * @example
 * ```ts
 * import { rowDecoder } from "moonbase/lib/db/shapes.ts";
 * const d = rowDecoder([["ok", "ok_col", "bool"], ["n", "n", "int"]]);
 * const dec = { decode: (k: string, v: unknown) => k === "bool" ? v === 1 : v };
 * const out = d({ ok_col: 1, n: 5 }, dec)!;
 * console.assert(out.ok === true && out.n === 5);
 * console.assert(d({ n: 5 }, dec) === undefined);
 * ```
 */
export function rowDecoder<K extends string>(
  plan: readonly (readonly [string, string, K])[],
): RowDecoder<K> {
  const reads = plan.map(([, col], i) => `v${i} = r[${JSON.stringify(col)}]`);
  const missing = plan.map((_, i) => `v${i} === undefined`);
  const fields = plan.map(([name, , kind], i) =>
    `${JSON.stringify(name)}: d.decode(${JSON.stringify(kind)}, v${i})`
  );
  return new Function(
    "r",
    "d",
    `const ${reads.join(", ")};
    if (${missing.join(" || ") || "false"}) return undefined;
    return {${fields.join(", ")}};`,
  ) as RowDecoder<K>;
}
