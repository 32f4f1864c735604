/**
 * Live checking of a rule or filter for the dashboard's editor: is it valid
 * (the same parse as a schema save / a list `filter`), where is the problem,
 * does a list apply it in SQL or row by row (the record service's own
 * decision), and which names may be typed (the vocabulary for completions).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { Registry } from "./registry.ts";
import { inspectExpression } from "../rules/inspect.ts";
import type { Access } from "./caller_access.ts";
import type { RuleEngine, RuleRequest } from "./rule_types.ts";
import { knownNames, userNames } from "./rule_names.ts";

/** The answer of `POST /api/v1/sys/rules/check`. */
export type CheckResult =
  | { valid: true; compiled: "sql" | "per-row"; reads: string[] }
  | {
    valid: false;
    error: string;
    detail: string;
    position: number;
    end: number;
  };

/** Field names a filter may use (as the list `filter` parameter allows). */
export function filterFields(entity: Entity): Set<string> {
  return new Set(
    entity.fields.map((f) => f.name).filter((n) => n !== "password"),
  );
}

/** How a list applies an `Access`: in SQL, or (some) rows checked in JavaScript. */
export function compiledOf(access: Access): "sql" | "per-row" {
  return access.keep === undefined ? "sql" : "per-row";
}

/**
 * A signed-in user whose own record is not known: the caller the `compiled`
 * answer of a check is computed for (a rule comparing with values of the
 * caller's record may compile for one user and not for another; the test
 * endpoint answers for a real caller).
 */
function standIn(registry: Registry): AuthValue {
  const id = "00000000-0000-7000-8000-000000000000";
  const entity = registry.all().find((e) =>
    e.type === "auth" && !e.isSystem && e.hasApi
  );
  return { id, entity: entity?.name ?? "", type: "user", user: { id } };
}

/** The request a list sees in a check: no body, no query. */
const LIST_REQUEST: RuleRequest = { body: {}, query: {}, method: "GET" };

/**
 * Checks `expr` for `entity` as a rule (`kind: "rule"`) or list filter.
 * An empty filter is valid (a list ignores it); an empty rule is not (a
 * custom rule needs an expression).
 */
export async function checkExpression(
  registry: Registry,
  engine: RuleEngine,
  helpers: ReadonlySet<string>,
  entity: Entity,
  expr: string,
  kind: "rule" | "filter",
): Promise<CheckResult> {
  if (kind === "filter" && expr.trim() === "") {
    return { valid: true, compiled: "sql", reads: [] };
  }
  const fields = kind === "filter" ? filterFields(entity) : new Set<string>();
  // A rule reads only names that exist, as a schema save checks them.
  const names = kind === "rule"
    ? knownNames(registry.all(), entity)
    : undefined;
  const r = inspectExpression(expr, kind, fields, helpers, names);
  if (!r.valid) {
    const { error, detail, position, end } = r;
    return { valid: false, error, detail, position, end };
  }
  const auth = standIn(registry);
  let compiled: "sql" | "per-row" = "sql";
  try {
    compiled = compiledOf(
      kind === "rule"
        ? await engine.access(entity, "list", expr, auth, LIST_REQUEST)
        : await engine.filter(entity, expr, auth, LIST_REQUEST),
    );
  } catch (err) {
    // A rule that denies this caller outright never reads a row.
    if (!(err instanceof MoonbaseError)) throw err;
  }
  return { valid: true, compiled, reads: r.reads };
}

/** The names the editor offers as completions. */
export interface Vocabulary {
  /** Field names of the entity (`password` left out). */
  record: string[];
  /**
   * `auth.id`, `auth.entity`, `auth.type`, `auth.user.<field>` of every auth
   * entity (built-ins always; `password` never).
   */
  auth: string[];
  /** `req.body.<field>` (writable fields), `req.query.`, `req.method`. */
  req: string[];
  /** Helper functions from the extension scripts. */
  helpers: string[];
  /** Methods and properties callable on values. */
  methods: string[];
}

const READ_ONLY = new Set(["id", "created", "updated"]);

/** The vocabulary of rules and filters on `entity`. */
export function vocabularyOf(
  registry: Registry,
  helpers: ReadonlySet<string>,
  entity: Entity,
): Vocabulary {
  const record = [...filterFields(entity)];
  // The names a schema save accepts after `auth.user.`.
  const userFields = userNames(registry.all());
  return {
    record,
    auth: [
      "auth.id",
      "auth.entity",
      "auth.type",
      ...[...userFields].map((n) => `auth.user.${n}`),
    ],
    req: [
      ...record.filter((n) => !READ_ONLY.has(n)).map((n) => `req.body.${n}`),
      "req.query.",
      "req.method",
    ],
    helpers: [...helpers].sort(),
    methods: [".length", ".includes(", ".startsWith(", ".endsWith("],
  };
}

/** The entity a rules endpoint names; 404 in plain words when unknown. */
export function ruleEntity(registry: Registry, name: unknown): Entity {
  if (typeof name !== "string" || name === "") {
    throw new MoonbaseError(
      "invalid",
      "Cannot check rule: entity must be a non-empty string",
    );
  }
  const e = registry.get(name);
  if (!e) {
    throw new MoonbaseError(
      "not_found",
      `Cannot find entity: no entity ${JSON.stringify(name.slice(0, 80))}`,
    );
  }
  return e;
}
