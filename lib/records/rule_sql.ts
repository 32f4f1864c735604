/**
 * What the rule compiler reads of entities at request time (`SqlContext`,
 * `SqlTable`), and the SQL of reads through relations that depend on the
 * caller: a filter's guards (a related record counts only if the caller's
 * own rule on its entity shows it: that rule compiled into the subquery)
 * and the value of a sort key through relations (`sort=author.name`).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { physicalName, type SqlValue } from "../db/storage.ts";
import type { AuthValue } from "../caller.ts";
import { columnOf, tableOf } from "../schema/ddl.ts";
import { kindOf } from "../schema/field_types.ts";
import type { Expr } from "../rules/ast.ts";
import type { Related, RuleHelpers } from "../rules/evaluate.ts";
import { readsRecord } from "../rules/parser.ts";
import { test } from "../rules/evaluate.ts";
import { bindRelations, MAX_HOPS } from "../rules/relations.ts";
import { closestName } from "../rules/names.ts";
import { type Cond, NotCompilable, sql } from "../rules/sql_fragment.ts";
import type { SqlContext, SqlTable } from "../rules/sql_context.ts";
import { compileToSql } from "../rules/to_sql.ts";
import type {
  CallerView,
  RuleRequest,
  RuleTarget,
  SortVia,
} from "./rule_types.ts";
import { shapesOf } from "./rule_shapes.ts";

/** The table of an entity as the compiler reads it (never `password`). */
export function sqlTable(entity: RuleTarget): SqlTable {
  return {
    table: tableOf(entity.name),
    column: (name) =>
      name !== "password" && entity.field(name)
        ? `"${physicalName(name)}"`
        : undefined,
    fieldType: (name) => {
      const f = name === "password" ? undefined : entity.field(name);
      // A multiple relation: a JSON list of ids (sql_json_path.ts `list`).
      if (f?.type === "relation" && f.multiple) return "relation[]";
      const type = f?.type;
      // A view's json column holds whatever its query computes: not compiled.
      return type === "json" && entity.type === "view" ? undefined : type;
    },
  };
}

/** What the compiler reads of `entity` for one request. */
export function sqlContextOf(
  entity: RuleTarget,
  auth: AuthValue,
  req: RuleRequest,
  helpers: RuleHelpers,
  related?: Related,
): SqlContext {
  const own = sqlTable(entity);
  return {
    dialect: entity.dialect.name,
    column: own.column,
    fieldType: own.fieldType,
    scope: { auth, req },
    helpers,
    table: own.table,
    tables: (name) => {
      const e = entity.lookup(name);
      return e && e.type !== "view" ? sqlTable(e) : undefined;
    },
    ...(related && { related }),
  };
}

/** Parses a stored rule (cached by the engine). */
export type ParseRule = (expr: string) => Expr;

/**
 * The guards of a caller's filter: the condition the caller's own rule on
 * a related entity puts on a record of it read as `alias` (see
 * `SqlContext.guard`). `root` finds the entities; `related`: the records
 * of `auth.user`'s relations those rules read, loaded as a rule reads them
 * (whatever their own rules say), never through the caller's view (a
 * record hidden from the caller would read as absent where the rule reads
 * it); a path not loaded fails the guard (the filter is then checked per
 * row, or the record is hidden).
 */
export function guardsOf(
  root: RuleTarget,
  view: CallerView,
  auth: AuthValue,
  helpers: RuleHelpers,
  parse: ParseRule,
  related: Related | undefined,
): (entity: string, op: "get" | "list", alias: string) => Cond {
  return (name, op, alias) => {
    const target = root.lookup(name);
    if (!target || target.type === "view") return false;
    const d = view.decide(target, op);
    if (d.kind !== "rule") return d.kind === "all";
    const ast = parse(d.expr);
    const user = auth.type === "user" ? root.lookup(auth.entity) : undefined;
    const bound = bindRelations(
      ast,
      shapesOf({
        find: (n) => target.lookup(n),
        record: target,
        user: user ? [user] : [],
      }),
    );
    if (!readsRecord(bound)) {
      return test(bound, { auth, req: view.req }, helpers, related);
    }
    const ctx: SqlContext = {
      ...sqlContextOf(target, auth, view.req, helpers, related),
      // Unqualified columns read the subquery's own row; deeper ones qualify.
      table: alias,
      aliases: `${alias.slice(1, -1)}_`,
    };
    const q = compileToSql(bound, ctx);
    if (!q) throw new NotCompilable(`the ${op} rule of ${name} has no SQL`);
    return { sql: q.sql, params: q.params };
  };
}

function refuse(path: string, why: string): never {
  throw new MoonbaseError(
    "invalid",
    `Cannot list records: cannot sort by ${path.slice(0, 200)}: ${why}`,
  );
}

/**
 * The value of a sort key through relations: `(SELECT a."name" FROM
 * "users" AS a WHERE a."id" = "posts"."author" AND <guard>)`, nested per
 * relation; NULL where a relation points at no record the caller may read.
 */
export function sortViaOf(
  entity: RuleTarget,
  path: readonly string[],
  guard: (entity: string, op: "get" | "list", alias: string) => Cond,
  refused: (e: RuleTarget) => string | undefined,
): SortVia {
  const shown = path.join(".");
  if (path.length - 1 > MAX_HOPS) {
    refuse(shown, `it reads through more than ${MAX_HOPS} relations`);
  }
  let from = entity;
  let value = sql(`${tableOf(entity.name)}.${columnOf(path[0])}`);
  const readable = (e: RuleTarget) =>
    e.fields.map((f) => f.name).filter((n) => n !== "password");
  for (let i = 0; i < path.length - 1; i++) {
    const name = path[i];
    const f = name === "password" ? undefined : from.field(name);
    if (!f) {
      const near = closestName(name, readable(from));
      refuse(
        shown,
        `${from.name} has no field ${JSON.stringify(name.slice(0, 64))}${
          near ? ` (did you mean ${JSON.stringify(near)}?)` : ""
        }`,
      );
    }
    if (f.type !== "relation" || !f.foreign_key) {
      refuse(shown, `${name} is no relation field of ${from.name}`);
    }
    if ((f as { multiple?: unknown }).multiple === true) {
      refuse(shown, `${name} holds several records`);
    }
    const into = from.lookup(f.foreign_key.entity);
    if (!into || into.type === "view") {
      refuse(shown, `${name} points at no entity`);
    }
    const why = refused(into);
    if (why !== undefined) refuse(shown, why);
    const last = path[i + 1];
    const column = i + 1 === path.length - 1
      ? leafColumn(into, last, shown, readable)
      : relationColumn(into, last, shown, readable);
    const alias = `"mb_s${i + 1}"`;
    let g: Cond;
    try {
      g = guard(into.name, "get", alias);
    } catch (err) {
      if (!(err instanceof NotCompilable)) throw err;
      refuse(
        shown,
        `the get rule of ${into.name} is checked row by row (not compiled to SQL)`,
      );
    }
    value = sql(
      `(SELECT ${alias}.${column} FROM ${
        tableOf(into.name)
      } AS ${alias} WHERE ${alias}."id" = `,
      value,
      g === true ? "" : g === false ? " AND 1 = 0" : sql(" AND ", g),
      ")",
    );
    from = into;
  }
  const leaf = from.field(path[path.length - 1])!;
  return {
    sql: value.sql,
    params: value.params as SqlValue[],
    kind: kindOf(leaf),
  };
}

function leafColumn(
  into: RuleTarget,
  name: string,
  shown: string,
  readable: (e: RuleTarget) => string[],
): string {
  const f = name === "password" ? undefined : into.field(name);
  if (!f) {
    const near = closestName(name, readable(into));
    refuse(
      shown,
      `${into.name} has no field ${JSON.stringify(name.slice(0, 64))}${
        near ? ` (did you mean ${JSON.stringify(near)}?)` : ""
      }`,
    );
  }
  if (kindOf(f) === "json") refuse(shown, `${name} is ${f.type}`);
  return columnOf(name);
}

function relationColumn(
  into: RuleTarget,
  name: string,
  shown: string,
  readable: (e: RuleTarget) => string[],
): string {
  // The next hop's relation field: checked there, read here.
  const f = name === "password" ? undefined : into.field(name);
  if (!f) {
    const near = closestName(name, readable(into));
    refuse(
      shown,
      `${into.name} has no field ${JSON.stringify(name.slice(0, 64))}${
        near ? ` (did you mean ${JSON.stringify(near)}?)` : ""
      }`,
    );
  }
  return columnOf(name);
}
