/**
 * The PostgreSQL dialect: column types, value encoding, constraint errors.
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
  int: "BIGINT",
  double: "DOUBLE PRECISION",
  bool: "BOOLEAN",
  json: "JSONB",
};

const CODES: Record<string, ConstraintFailure["kind"]> = {
  "23505": "unique",
  "23503": "foreign_key",
  "23502": "not_null",
  "23514": "check",
  // program_limit_exceeded: on a write, an index entry over ~2.7 kB.
  "54000": "too_long",
};

/** A JSON parameter postgres.js must not infer a type for (see `encode`). */
class JsonParam {
  constructor(readonly value: unknown) {}
  toJSON(): unknown {
    return this.value;
  }
}

/** The PostgreSQL dialect. */
export const postgresDialect: Dialect = {
  name: "postgres",
  forUpdate: " FOR UPDATE",
  jsonArrayContains: (col) => `${col} @> jsonb_build_array(?::text)`,
  columnType: (kind) => TYPES[kind],
  encode(kind, value) {
    if (value === null || value === undefined) return null;
    // postgres.js serializes JSONB parameters itself (it learns their type
    // when preparing), unless it infers a type from the value first: `true`
    // becomes a bool and `[true]` a bool[] parameter, which PostgreSQL
    // refuses for a jsonb column. Such values go wrapped: inferred as
    // unknown, serialized through toJSON as the JSON they are.
    if (kind === "json") {
      return (typeof value === "boolean" || Array.isArray(value)
        ? new JsonParam(value)
        : value) as SqlValue;
    }
    return value as SqlValue;
  },
  decode(kind, value) {
    if (value === null || value === undefined) return null;
    // A value encoded here and not stored yet (a write's record as it will
    // be stored, read by its rule check and hooks): the value itself.
    if (value instanceof JsonParam) return value.value;
    if (kind === "int" || kind === "double") return Number(value);
    return value;
  },
  constraintFailure(err) {
    const e = err as { code?: string; constraint_name?: string };
    const kind = e.code ? CODES[e.code] : undefined;
    if (!kind) return undefined;
    return e.constraint_name
      ? { kind, constraint: e.constraint_name }
      : { kind };
  },
};
