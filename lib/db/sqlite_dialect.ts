/**
 * The SQLite dialect: column types, value encoding (booleans as 0/1, JSON as
 * text) and constraint failures read from SQLite's extended error codes.
 *
 * @module
 */

import type {
  ColumnKind,
  ConstraintFailure,
  Dialect,
  SqlValue,
} from "./storage.ts";

const TYPES: Record<ColumnKind, string> = {
  text: "TEXT",
  int: "INTEGER",
  double: "REAL",
  bool: "INTEGER",
  json: "TEXT",
};

/**
 * The SQLite dialect.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sqliteDialect } from "moonbase/lib/db/sqlite_dialect.ts";
 * assert.ok(sqliteDialect.encode("bool", true) === 1);
 * const v = sqliteDialect.decode("json", '{"a":1}') as { a: number };
 * assert.ok(v.a === 1);
 * ```
 */
export const sqliteDialect: Dialect = {
  name: "sqlite",
  forUpdate: "",
  jsonArrayContains: (col) =>
    `EXISTS (SELECT 1 FROM json_each(${col}) WHERE json_each.value = ?)`,
  columnType: (kind) => TYPES[kind],
  encode(kind, value) {
    if (value === null || value === undefined) return null;
    if (kind === "bool") return value ? 1 : 0;
    if (kind === "json") return JSON.stringify(value);
    return value as SqlValue;
  },
  decode(kind, value) {
    if (value === null || value === undefined) return null;
    if (kind === "bool") return value === 1 || value === true;
    if (kind === "json") {
      return typeof value === "string" ? JSON.parse(value) : value;
    }
    return value;
  },
  constraintFailure(err) {
    const code = (err as { errcode?: number }).errcode;
    const message = err instanceof Error ? err.message : "";
    const table: Record<number, ConstraintFailure["kind"]> = {
      2067: "unique",
      1555: "unique",
      787: "foreign_key",
      1299: "not_null",
      275: "check",
    };
    const byMessage = /^UNIQUE constraint failed/.test(message)
      ? "unique"
      : /^FOREIGN KEY constraint failed/.test(message)
      ? "foreign_key"
      : /^NOT NULL constraint failed/.test(message)
      ? "not_null"
      : undefined;
    const kind = (code === undefined ? undefined : table[code]) ?? byMessage;
    if (!kind) return undefined;
    // One column, or a unique index's list of them ("t.a, t.b").
    // An index over an expression (`fold(<field>)`) is named instead.
    const index = /failed: index '(\w+)'/.exec(message)?.[1];
    if (index) return { kind, constraint: index };
    const column = /failed: ([\w.]+(?:, [\w.]+)*)/.exec(message)?.[1];
    return column ? { kind, column } : { kind };
  },
};
