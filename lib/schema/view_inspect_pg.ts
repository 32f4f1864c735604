/**
 * What a PostgreSQL view reads and calls, from the database's own parse tree
 * of it (`pg_rewrite.ev_action`), not from its SQL text.
 *
 * `pg_depend` alone is not enough: PostgreSQL records no dependency on pinned
 * (built-in) objects, so a view over `pg_class` or one calling `query_to_xml`
 * shows none. The stored tree names every relation (`:relid`), function
 * (`:funcid`, `:opfuncid`, `:aggfnoid`, `:winfnoid`, …) and operator by OID;
 * identifiers inside it are printed with their spaces escaped, so no alias
 * can forge a `:key number` pair (and a forged one could only add refusals).
 *
 * @module
 */

import type { Queryable, Row } from "../db/storage.ts";
import { functionAllowed } from "./view_functions_pg.ts";
import type { ViewColumn, ViewInspection } from "./view_shapes.ts";

const FUNCTION_KEYS = [
  "funcid",
  "opfuncid",
  "hashfuncid",
  "negfuncid",
  "aggfnoid",
  "winfnoid",
];
const OPERATOR_KEYS = ["opno", "eqop", "sortop"];
/** Nodes a view may not contain: a domain's CHECK may call any function. */
const REFUSED_NODES = ["COERCETODOMAIN"];

/**
 * Types whose input and output functions look names up in the catalogs
 * (`regproc`, `regprocedure`, `regoper`, `regoperator`, `regclass`,
 * `regtype`, `regrole`, `regnamespace`, `regconfig`, `regdictionary`,
 * `regcollation`, `aclitem`) and their arrays: `(n::oid)::regclass::text`
 * lists every table. The OIDs are fixed in `pg_catalog`.
 */
const CATALOG_TYPES = new Set([
  24,
  1008,
  2202,
  2207,
  2203,
  2208,
  2204,
  2209,
  2205,
  2210,
  2206,
  2211,
  4096,
  4097,
  4089,
  4090,
  3734,
  3735,
  3769,
  3770,
  4191,
  4192,
  1033,
  1034,
]);
/** `SQLValueFunction` ops from `CURRENT_ROLE` (9) on: role, database and schema names. */
const FIRST_NAME_OP = 9;

/** Refusals for catalog types and name-giving SQL value functions in a tree. */
function catalogUses(tree: string, refused: Set<string>): void {
  for (const m of tree.matchAll(/:\w*type\w* (\d+)/g)) {
    if (CATALOG_TYPES.has(Number(m[1]))) {
      refused.add("a catalog type (regclass, regrole, …)");
    }
  }
  for (const m of tree.matchAll(/:\w*types \(o([\d ]*)\)/g)) {
    for (const n of m[1].trim().split(/\s+/)) {
      if (CATALOG_TYPES.has(Number(n))) {
        refused.add("a catalog type (regclass, regrole, …)");
      }
    }
  }
  for (const m of tree.matchAll(/\{SQLVALUEFUNCTION :op (\d+)/g)) {
    if (Number(m[1]) >= FIRST_NAME_OP) {
      refused.add("the current role, database or schema name");
    }
  }
}

const HERE =
  `(SELECT "oid" FROM pg_namespace WHERE nspname = current_schema())`;

function ints(tree: string, key: string, into: Set<number>): void {
  for (const m of tree.matchAll(new RegExp(`:${key} (\\d+)`, "g"))) {
    const n = Number(m[1]);
    if (n > 0) into.add(n);
  }
}

function oidList(oids: Iterable<number>): string {
  return `{${[...oids].join(",")}}`;
}

/** Origins (`resorigtbl`, `resorigcol`) of the top query's visible columns, in order. */
function topTargets(tree: string): { table: number; column: number }[] {
  const out: { table: number; column: number }[] = [];
  let depth = 0;
  for (let i = 0; i < tree.length; i++) {
    const ch = tree[i];
    if (ch === "\\") {
      i++;
    } else if (ch === "}") {
      depth--;
    } else if (ch === "{") {
      depth++;
      if (depth !== 2 || !tree.startsWith("TARGETENTRY", i + 1)) continue;
      let end = i + 1, d = 1;
      for (; end < tree.length && d > 0; end++) {
        if (tree[end] === "\\") end++;
        else if (tree[end] === "{") d++;
        else if (tree[end] === "}") d--;
      }
      // The entry's own keys follow its (possibly nested) expression: take the last ones.
      const body = tree.slice(i, end);
      const last = (key: string) => {
        const all = [...body.matchAll(new RegExp(`:${key} (\\w+)`, "g"))];
        return all.length ? all[all.length - 1][1] : "";
      };
      if (last("resjunk") !== "true") {
        out.push({
          table: Number(last("resorigtbl")) || 0,
          column: Number(last("resorigcol")) || 0,
        });
      }
      i = end - 1;
      depth--;
    }
  }
  return out;
}

async function ruleOf(
  tx: Queryable,
  where: string,
  param: string,
): Promise<Row | undefined> {
  const rows = await tx.query(
    `SELECT c."oid"::int8 AS "oid", r.ev_action::text AS "tree" FROM pg_class c JOIN pg_rewrite r ON r.ev_class = c."oid" AND r.rulename = '_RETURN' WHERE ${where}`,
    [param],
  );
  return rows[0];
}

/** Inspects the view `physical` of the current schema (it must exist). */
export async function inspectPostgres(
  tx: Queryable,
  physical: string,
): Promise<ViewInspection> {
  const top = await ruleOf(
    tx,
    `c.relname = ? AND c.relkind = 'v' AND c.relnamespace = ${HERE}`,
    physical,
  );
  if (!top) throw new Error(`view ${physical} not found`);
  const self = Number(top.oid);
  const reads = new Set<string>(), refused = new Set<string>();
  const fns = new Set<number>(), ops = new Set<number>();
  const seen = new Set<number>([self]);
  let trees = [String(top.tree)];
  while (trees.length > 0) {
    const relids = new Set<number>();
    for (const tree of trees) {
      ints(tree, "relid", relids);
      for (const k of FUNCTION_KEYS) ints(tree, k, fns);
      for (const k of OPERATOR_KEYS) ints(tree, k, ops);
      for (const m of tree.matchAll(/:opnos \(o([\d ]*)\)/g)) {
        for (const n of m[1].trim().split(/\s+/)) if (n) ops.add(Number(n));
      }
      catalogUses(tree, refused);
      for (const node of REFUSED_NODES) {
        if (tree.includes(`{${node} `)) refused.add("a domain type");
      }
    }
    for (const id of seen) relids.delete(id);
    trees = [];
    if (relids.size === 0) break;
    const rels = await tx.query(
      `SELECT c."oid"::int8 AS "oid", c.relname AS "name", n.nspname AS "ns", c.relkind::text AS "kind", (c.relnamespace = ${HERE}) AS "here" FROM pg_class c JOIN pg_namespace n ON n."oid" = c.relnamespace WHERE c."oid" = ANY(?::oid[])`,
      [oidList(relids)],
    );
    for (const rel of rels) {
      const id = Number(rel.oid);
      seen.add(id);
      if (rel.here !== true) {
        reads.add(`${rel.ns}.${rel.name}`);
        continue;
      }
      reads.add(String(rel.name));
      if (rel.kind === "v") {
        const inner = await ruleOf(tx, `c."oid" = ?::oid`, String(id));
        if (inner) trees.push(String(inner.tree));
      }
    }
  }
  if (ops.size > 0) {
    const codes = await tx.query(
      `SELECT oprcode::oid::int8 AS "fn" FROM pg_operator WHERE "oid" = ANY(?::oid[])`,
      [oidList(ops)],
    );
    for (const c of codes) if (Number(c.fn) > 0) fns.add(Number(c.fn));
  }
  if (fns.size > 0) {
    const procs = await tx.query(
      `SELECT p.proname AS "name", (p.pronamespace = 'pg_catalog'::regnamespace) AS "builtin", p.prokind::text AS "kind", EXISTS (SELECT 1 FROM pg_operator o WHERE o.oprcode = p."oid") AS "operator", EXISTS (SELECT 1 FROM pg_cast k WHERE k.castfunc = p."oid") AS "cast" FROM pg_proc p WHERE p."oid" = ANY(?::oid[])`,
      [oidList(fns)],
    );
    for (const p of procs) {
      const info = {
        name: String(p.name),
        builtin: p.builtin === true,
        kind: String(p.kind),
        operator: p.operator === true,
        cast: p.cast === true,
      };
      if (!functionAllowed(info)) refused.add(`function ${info.name}`);
    }
  }
  return {
    reads: [...reads],
    refused: [...refused],
    columns: await columnsOf(tx, self, String(top.tree)),
  };
}

async function columnsOf(
  tx: Queryable,
  self: number,
  tree: string,
): Promise<ViewColumn[]> {
  const attrs = await tx.query(
    `SELECT attname AS "name", format_type(atttypid, NULL) AS "type" FROM pg_attribute WHERE attrelid = ?::oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [String(self)],
  );
  const targets = topTargets(tree);
  const tables = new Set(targets.map((t) => t.table).filter((t) => t > 0));
  const origin = new Map<string, { table: string; column: string }>();
  if (tables.size > 0) {
    const rows = await tx.query(
      `SELECT c."oid"::int8 AS "rel", a.attnum::int8 AS "num", c.relname AS "tbl", a.attname AS "col" FROM pg_attribute a JOIN pg_class c ON c."oid" = a.attrelid WHERE a.attrelid = ANY(?::oid[]) AND a.attnum > 0 AND c.relnamespace = ${HERE}`,
      [oidList(tables)],
    );
    for (const r of rows) {
      origin.set(`${Number(r.rel)}:${Number(r.num)}`, {
        table: String(r.tbl),
        column: String(r.col),
      });
    }
  }
  return attrs.map((a, i) => {
    const t = targets.length === attrs.length ? targets[i] : undefined;
    const from = t ? origin.get(`${t.table}:${t.column}`) : undefined;
    return { name: String(a.name), dbType: String(a.type), ...from };
  });
}
