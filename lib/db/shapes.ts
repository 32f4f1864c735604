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
 * import assert from "node:assert/strict";
 * import { rowMaker } from "moonbase/lib/db/shapes.ts";
 * const make = rowMaker(["id", "title"]);
 * const row = make(["a1", "Hello"]);
 * assert.ok(row.id === "a1" && row.title === "Hello");
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
 * The decoder for a plan of `[name, column, kind]` (with a name
 * `__proto__`, it always answers undefined: callers keep a slower path).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rowDecoder } from "moonbase/lib/db/shapes.ts";
 * const d = rowDecoder([["ok", "ok_col", "bool"], ["n", "n", "int"]]);
 * const dec = { decode: (k: string, v: unknown) => k === "bool" ? v === 1 : v };
 * const out = d({ ok_col: 1, n: 5 }, dec)!;
 * assert.ok(out.ok === true && out.n === 5);
 * assert.ok(d({ n: 5 }, dec) === undefined);
 * ```
 */
export function rowDecoder<K extends string>(
  plan: readonly (readonly [string, string, K])[],
): RowDecoder<K> {
  // `__proto__` cannot be a literal's own property: callers take their slow path.
  if (plan.some(([name]) => name === "__proto__")) return () => undefined;
  const reads = plan.map(([, col], i) => {
    const key = JSON.stringify(col);
    // Names every object has (`constructor`, `toString`…) must be the row's own.
    return col in Object.prototype
      ? `v${i} = Object.hasOwn(r, ${key}) ? r[${key}] : undefined`
      : `v${i} = r[${key}]`;
  });
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

/**
 * Row makers per statement text, re-made when a statement's columns change
 * (checked by name on every use: cheap next to the rows themselves).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RowMakers } from "moonbase/lib/db/shapes.ts";
 * const makers = new RowMakers();
 * const make = makers.for("SELECT a", [{ name: "a" }]);
 * assert.ok(make([1]).a === 1);
 * assert.ok(makers.for("SELECT a", [{ name: "a" }]) === make);
 * ```
 */
export class RowMakers {
  #known = new Map<string, { names: string[]; make: RowMaker }>();

  /** The maker for `text` whose result has `columns`. */
  for(text: string, columns: readonly { name: string }[]): RowMaker {
    const known = this.#known.get(text);
    if (
      known && known.names.length === columns.length &&
      known.names.every((n, i) => n === columns[i].name)
    ) return known.make;
    if (this.#known.size > 2000) this.#known.clear();
    const names = columns.map((c) => c.name);
    const make = rowMaker(names);
    this.#known.set(text, { names, make });
    return make;
  }
}
