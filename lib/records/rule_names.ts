/**
 * Rules read only names that exist: which names an entity's rules may read
 * (`record.<field>`, `auth.user.<field>`), the refusal of a schema change
 * after which a working rule would read a name that is gone, and the stored
 * rules that read one already (warned at start, shown by the rule check).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { KnownNames } from "../rules/names.ts";
import type { RuleProblem } from "../rules/check.ts";
import {
  type EntitySchema,
  type FieldDef,
  type Operation,
  OPERATIONS,
} from "../schema/types.ts";
import { builtinFields } from "../schema/builtin.ts";
import {
  backNames,
  NameSet,
  shapesOf,
  type ShapeSource,
} from "./rule_shapes.ts";

/** An entity as rules see it: its schema and every field (built-ins included). */
export interface RuleWorldEntity {
  readonly schema: EntitySchema;
  readonly fields: readonly FieldDef[];
}

/** Checks a custom rule, with the names it may read when given. */
export type RuleCheck = (
  expr: string,
  names?: KnownNames,
) => RuleProblem | undefined;

const readable = (fields: readonly FieldDef[]): string[] =>
  fields.map((f) => f.name).filter((n) => n !== "password");

/**
 * The names `auth.user.<name>` may read: the fields of every auth entity but
 * the system ones (admins pass every rule) and those without an API (their
 * users are shut out everywhere: lib/auth/sessions.ts), their built-ins
 * always, never `password`. The caller may come from any auth entity, so the
 * union.
 */
export function userNames(
  world: readonly RuleWorldEntity[],
): Set<string> {
  const out = new Set(readable(builtinFields("auth")));
  const sources = world.map(sourceOf);
  const back = new Set<string>();
  for (const e of userEntities(world)) {
    for (const n of readable(e.fields)) out.add(n);
    for (const n of backNames(sources, e.schema.name)) back.add(n);
  }
  return new NameSet(out, (n) => back.has(n));
}

/** The auth entities a caller may come from (see {@link userNames}). */
function userEntities(world: readonly RuleWorldEntity[]): RuleWorldEntity[] {
  return world.filter((e) =>
    e.schema.type === "auth" && !e.schema.is_system && e.schema.has_api
  );
}

function sourceOf(e: RuleWorldEntity): ShapeSource {
  return { name: e.schema.name, type: e.schema.type, fields: e.fields };
}

/**
 * The names the rules of `entity` may read, in `world`: `record.<field>`
 * (not `password`; with the field types, but for views) and its
 * back-relations (`record.<entity>_via_<field>`), `auth.user.<field>`
 * (see {@link userNames}), `req.body.<field>` (every field: a body may
 * carry a new `password`), and through relations the related entities'
 * fields at any depth (`shapes`).
 */
export function knownNames(
  world: readonly RuleWorldEntity[],
  entity: RuleWorldEntity,
  user: ReadonlySet<string> = userNames(world),
): KnownNames {
  const sources = world.map(sourceOf);
  const byName = new Map(sources.map((s) => [s.name.toLowerCase(), s]));
  const self = sourceOf(entity);
  return {
    record: new NameSet(
      readable(entity.fields),
      (n) =>
        entity.schema.type !== "view" &&
        backNames(sources, entity.schema.name).includes(n),
    ),
    user,
    body: new Set(entity.fields.map((f) => f.name)),
    shapes: entity.schema.type === "view" ? undefined : shapesOf({
      find: (n) => byName.get(n.toLowerCase()),
      record: self,
      user: userEntities(world).map(sourceOf),
    }),
    // A view's row is what its query gives (a PostgreSQL bigint may be a
    // string): members of its columns are not checked.
    types: entity.schema.type === "view"
      ? undefined
      : new Map(entity.fields.map((f) => [f.name, typeName(f)])),
  };
}

/** A field's type as rules' name checks see it (`names.ts` `memberProblem`). */
function typeName(f: FieldDef): string {
  return f.type === "relation" && f.multiple ? "relation[]" : f.type;
}

/** One stored custom rule that reads a name that does not exist. */
export interface StoredRuleProblem {
  entity: string;
  op: Operation;
  problem: string;
}

/** The custom rules of `world` that fail `check` with the names they may read. */
export function ruleProblems(
  world: readonly RuleWorldEntity[],
  check: RuleCheck,
): StoredRuleProblem[] {
  const user = userNames(world);
  const out: StoredRuleProblem[] = [];
  for (const e of world) {
    if (e.schema.is_system) continue;
    const names = knownNames(world, e, user);
    for (const op of OPERATIONS) {
      const rule = e.schema.rules[op];
      if (rule.mode !== "custom") continue;
      const problem = check(rule.expr, names);
      if (problem) {
        out.push({ entity: e.schema.name, op, problem: problem.message });
      }
    }
  }
  return out;
}

/**
 * Refuses a schema change (`action` on entity `subject`, whose id is
 * `changed`) when, in the world `after` it, a custom rule reads a name that
 * does not exist:
 *
 * - a rule the change saves (new, or its text changed) → 400
 *   `Cannot accept rules.<op>.expr: …` with the position and closest name;
 * - a rule that worked before the change (a field dropped or renamed, an
 *   auth entity deleted) → 409 naming the rule and the name. A rule that
 *   read an unknown name already before (saved by an older version) does
 *   not block other changes.
 */
export function refuseBrokenRules(
  before: readonly RuleWorldEntity[],
  after: readonly RuleWorldEntity[],
  change: { action: "create" | "change" | "delete"; subject: string },
  changed: string | undefined,
  check: RuleCheck,
): void {
  const userBefore = userNames(before);
  const userAfter = userNames(after);
  for (const e of after) {
    if (e.schema.is_system) continue;
    const old = before.find((b) => b.schema.id === e.schema.id);
    let names: KnownNames | undefined;
    for (const op of OPERATIONS) {
      const rule = e.schema.rules[op];
      if (rule.mode !== "custom") continue;
      names ??= knownNames(after, e, userAfter);
      const problem = check(rule.expr, names);
      if (!problem) continue;
      const was = old?.schema.rules[op];
      if (was?.mode !== "custom" || was.expr !== rule.expr) {
        if (e.schema.id === changed) {
          throw new MoonbaseError(
            "invalid",
            `Cannot accept rules.${op}.expr: ${problem.message}`,
          );
        }
        continue; // not this change's rule (cannot happen: only `changed` gets new rules)
      }
      if (check(was.expr, knownNames(before, old!, userBefore))) continue;
      const whose = e.schema.id === changed
        ? `its ${op} rule`
        : `the ${op} rule of ${e.schema.name}`;
      throw new MoonbaseError(
        "conflict",
        `Cannot ${change.action} entity ${change.subject}: ${whose} reads ${
          problem.unknown ?? "a name"
        }, which would no longer exist; change that rule ${
          e.schema.id === changed ? "in the same request" : "first"
        }`,
      );
    }
  }
}
