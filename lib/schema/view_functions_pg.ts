/**
 * Which PostgreSQL functions a view may call: an allowlist.
 *
 * A denylist of "functions that run SQL or reach the server" can never be
 * complete (`query_to_xml`, `table_to_xml`, `cursor_to_xml`, `ts_stat`,
 * `pg_read_file`, `pg_ls_dir`, `lo_get`, `current_setting`, `set_config`,
 * `dblink`, `nextval`, `pg_sleep`, `pg_terminate_backend`, … and whatever an
 * extension or a later release adds), so a view may call only:
 *
 * - functions in `pg_catalog` that implement a built-in operator (`+`, `=`,
 *   `||`, `->>`, `~~`, …), a built-in cast, or a built-in aggregate or window
 *   function (`count`, `sum`, `json_agg`, `row_number`, …): none of them runs
 *   SQL or reads anything but its arguments;
 * - the `pg_catalog` functions named in {@link SAFE_FUNCTIONS}: string, number,
 *   date, array and JSON functions that compute from their arguments alone.
 *
 * Anything else — every function outside `pg_catalog` (user-defined, from an
 * extension) and every other built-in — is refused.
 *
 * @module
 */

/** Built-in functions (by name, in `pg_catalog`) a view may call. */
export const SAFE_FUNCTIONS: ReadonlySet<string> = new Set([
  // strings
  "length",
  "char_length",
  "character_length",
  "octet_length",
  "bit_length",
  "lower",
  "upper",
  "initcap",
  "substr",
  "substring",
  "position",
  "strpos",
  "left",
  "right",
  "lpad",
  "rpad",
  "btrim",
  "ltrim",
  "rtrim",
  "replace",
  "translate",
  "reverse",
  "repeat",
  "split_part",
  "concat",
  "concat_ws",
  "starts_with",
  "format",
  "md5",
  "encode",
  "decode",
  "chr",
  "ascii",
  "to_hex",
  "overlay",
  "normalize",
  "quote_literal",
  "quote_ident",
  "quote_nullable",
  "regexp_replace",
  "regexp_match",
  "regexp_matches",
  "regexp_split_to_array",
  "regexp_split_to_table",
  "regexp_like",
  "regexp_count",
  "regexp_substr",
  "regexp_instr",
  "string_to_array",
  "array_to_string",
  "to_char",
  "to_number",
  // numbers
  "abs",
  "ceil",
  "ceiling",
  "floor",
  "round",
  "trunc",
  "sign",
  "mod",
  "div",
  "power",
  "pow",
  "sqrt",
  "cbrt",
  "exp",
  "ln",
  "log",
  "log10",
  "pi",
  "degrees",
  "radians",
  "width_bucket",
  "random",
  "num_nulls",
  "num_nonnulls",
  // dates
  "now",
  "transaction_timestamp",
  "statement_timestamp",
  "clock_timestamp",
  "date_trunc",
  "date_part",
  "date_bin",
  "extract",
  "age",
  "make_date",
  "make_time",
  "make_timestamp",
  "make_timestamptz",
  "make_interval",
  "justify_days",
  "justify_hours",
  "justify_interval",
  "to_timestamp",
  "to_date",
  "timezone",
  "isfinite",
  // arrays and sets
  "array_length",
  "array_lower",
  "array_upper",
  "array_ndims",
  "cardinality",
  "array_position",
  "array_positions",
  "array_append",
  "array_prepend",
  "array_cat",
  "array_remove",
  "array_replace",
  "unnest",
  "generate_series",
  "generate_subscripts",
  // JSON
  "to_json",
  "to_jsonb",
  "row_to_json",
  "array_to_json",
  "json_build_object",
  "jsonb_build_object",
  "json_build_array",
  "jsonb_build_array",
  "json_object",
  "jsonb_object",
  "json_array_length",
  "jsonb_array_length",
  "json_typeof",
  "jsonb_typeof",
  "json_extract_path",
  "json_extract_path_text",
  "jsonb_extract_path",
  "jsonb_extract_path_text",
  "json_array_elements",
  "jsonb_array_elements",
  "json_array_elements_text",
  "jsonb_array_elements_text",
  "json_each",
  "jsonb_each",
  "json_each_text",
  "jsonb_each_text",
  "json_object_keys",
  "jsonb_object_keys",
  "json_strip_nulls",
  "jsonb_strip_nulls",
  "jsonb_set",
  "jsonb_insert",
  "jsonb_pretty",
  "jsonb_path_exists",
  "jsonb_path_match",
  "jsonb_path_query",
  "jsonb_path_query_array",
  "jsonb_path_query_first",
  // ids
  "gen_random_uuid",
]);

/** What the catalog says about one function a view calls. */
export interface ProcInfo {
  name: string;
  /** Defined in `pg_catalog`. */
  builtin: boolean;
  /** Implements an operator. */
  operator: boolean;
  /** Implements a cast. */
  cast: boolean;
  /** `prokind`: f function, a aggregate, w window, p procedure. */
  kind: string;
}

/**
 * True when a view may call this function (see the module text).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { functionAllowed } from "moonbase/lib/schema/view_functions_pg.ts";
 * const fn = { builtin: true, operator: false, cast: false, kind: "f" };
 * assert.equal(functionAllowed({ ...fn, name: "lower" }), true);
 * assert.equal(functionAllowed({ ...fn, name: "query_to_xml" }), false);
 * assert.equal(functionAllowed({ ...fn, name: "lower", builtin: false }), false);
 * ```
 */
export function functionAllowed(p: ProcInfo): boolean {
  if (!p.builtin) return false;
  if (p.operator || p.cast || p.kind === "a" || p.kind === "w") return true;
  return p.kind === "f" && SAFE_FUNCTIONS.has(p.name);
}
