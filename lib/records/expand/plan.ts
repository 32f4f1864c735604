/**
 * What an `expand` tree means for an entity: each segment resolved to a
 * forward relation (a relation field of the current entity) or a
 * back-relation (`<entity>_via_<field>`: the records of `<entity>` whose
 * relation `<field>` points at the current record). An unknown segment is a
 * 400 naming its path.
 *
 * Names are resolved without telling anything a caller could not learn from
 * the records API itself: a back-relation's entity must be one the API
 * serves (otherwise it reads as unknown, like a name that does not exist);
 * into an entity the API serves but whose rule mode refuses the caller
 * (`canUse`), any `<entity>_via_<name>` is accepted and below it, as below
 * a relation into an entity the caller cannot use, nothing is checked: the
 * expansion is absent whatever follows, and no 400 tells that entity's
 * fields.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";
import type { EntityType, FieldDef, Rules } from "../../schema/types.ts";
import type { AuthValue } from "../../caller.ts";
import { authorize, isExposed } from "../access.ts";
import type { ExpandTree } from "./paths.ts";

/** What the plan reads of an entity (an `Entity` is one). */
export interface PlanEntity {
  readonly name: string;
  readonly type: EntityType;
  readonly isSystem: boolean;
  readonly hasApi: boolean;
  readonly rules: Readonly<Rules>;
  field(name: string): FieldDef | undefined;
}

/** Entities by name (case-insensitive, as the registry finds them). */
export type EntityLookup = (name: string) => PlanEntity | undefined;

/**
 * Whether the caller's rule mode lets it read an entity's records through
 * `op` at all (custom rules: yes, decided per record).
 */
export type CanUse = (entity: PlanEntity, op: "get" | "list") => boolean;

/**
 * `CanUse` for a caller: its rule mode for the operation does not refuse
 * it (admins: always; custom rules: yes, they decide per record).
 */
export function canUseAs(auth: AuthValue): CanUse {
  return (entity, op) => {
    try {
      authorize(entity, op, auth);
      return true;
    } catch {
      return false; // the rule mode refuses this caller: the expansion is absent
    }
  };
}

/** How a plan resolves names. */
export interface PlanScope {
  lookup: EntityLookup;
  canUse: CanUse;
  /** Starts a 400's message (`list records`). */
  action: string;
}

/** One segment of a planned `expand`. */
export interface ExpandNode {
  /** The segment as written (the key under the record's `expand`). */
  readonly key: string;
  /** The dotted path up to here, for messages. */
  readonly path: string;
  /**
   * `forward`: `field` is a relation field of the parent's entity; `back`:
   * `field` is a relation field of `entity` pointing at the parent's.
   */
  readonly kind: "forward" | "back";
  readonly field: string;
  /** The entity expanded into. */
  readonly entity: string;
  /**
   * False when the API does not serve `entity` or the caller's rule mode
   * refuses it (when planned): the expansion is absent.
   */
  readonly served: boolean;
  readonly children: readonly ExpandNode[];
}

/** The key an expanded record's expansions go under. */
export const EXPAND_KEY = "expand";

/**
 * Sets an own property, whatever its name (a field or segment named
 * `__proto__` stays a key of the JSON, never the object's prototype).
 */
export function putKey(
  target: Record<string, unknown>,
  key: string,
  value: unknown,
): void {
  if (key !== "__proto__") {
    // A plain store makes the same own property (the targets are plain
    // objects: no setter on their prototype but `__proto__`'s), and keeps
    // them fast objects: `defineProperty` on each cost ~0.9 µs a call and
    // slowed their JSON (list 50 with expand=author: ~45 µs a request).
    target[key] = value;
    return;
  }
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function unknownPath(action: string, path: string, of: string): never {
  const seg = path.slice(path.lastIndexOf(".") + 1);
  throw new MoonbaseError(
    "invalid",
    `Cannot ${action}: unknown expand path ${
      JSON.stringify(path.slice(0, 200))
    } (${
      JSON.stringify(seg.slice(0, 100))
    } is no relation field of ${of}, nor <entity>_via_<field> naming a relation field that points at ${of})`,
  );
}

/**
 * The readings of a segment as `<entity>_via_<field>`, split at each
 * `_via_` in turn (an entity name may hold `_via_` itself): the one home of
 * how back-relation names resolve, for `expand` and for rules and filters
 * (lib/records/rule_shapes.ts). `lookup` finds entities by name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { viaReadings } from "moonbase/lib/records/expand/plan.ts";
 * assert.deepEqual(viaReadings("a_via_b_via_c"), [
 *   { entity: "a", field: "b_via_c" },
 *   { entity: "a_via_b", field: "c" },
 * ]);
 * ```
 */
export function viaReadings(seg: string): { entity: string; field: string }[] {
  const out: { entity: string; field: string }[] = [];
  for (let i = seg.indexOf("_via_"); i > 0; i = seg.indexOf("_via_", i + 1)) {
    const field = seg.slice(i + 5);
    if (field !== "") out.push({ entity: seg.slice(0, i), field });
  }
  return out;
}

/**
 * Whether `field` of `from` is a relation pointing at the entity named
 * `to` (a back-relation of `to` through it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { relationTo } from "moonbase/lib/records/expand/plan.ts";
 * import type { FieldDef } from "moonbase/lib/schema/types.ts";
 * const post: FieldDef = { id: "f1", name: "post", type: "relation", required: false, unique: false,
 *   foreign_key: { entity: "posts", on_delete: "cascade" } };
 * const comments = { field: (n: string) => n === "post" ? post : undefined };
 * assert.equal(relationTo(comments, "post", "Posts"), true);
 * assert.equal(relationTo(comments, "author", "posts"), false);
 * ```
 */
export function relationTo(
  from: { field(name: string): FieldDef | undefined },
  field: string,
  to: string,
): boolean {
  const f = from.field(field);
  return f?.type === "relation" &&
    f.foreign_key?.entity.toLowerCase() === to.toLowerCase();
}

/** The back-relation a segment names, if any. */
function backRelation(
  scope: PlanScope,
  of: PlanEntity,
  seg: string,
): { entity: PlanEntity; field: string; usable: boolean } | undefined {
  for (const { entity: name, field } of viaReadings(seg)) {
    const e = scope.lookup(name);
    // Only entities the API serves: any other reads as a name that does not exist.
    if (!isExposed(e, name) || e.type === "view") continue;
    // Refused outright: its fields are not the caller's to learn.
    if (!scope.canUse(e, "list")) return { entity: e, field, usable: false };
    if (relationTo(e, field, of.name)) {
      return { entity: e, field, usable: true };
    }
  }
  return undefined;
}

/**
 * Resolves an `expand` tree against `root` (the entity whose records are
 * expanded); `action` starts a 400's message.
 */
export function planExpand(
  scope: PlanScope,
  root: PlanEntity,
  tree: ExpandTree,
): ExpandNode[] {
  return planLevel(scope, root, tree, "");
}

function planLevel(
  scope: PlanScope,
  of: PlanEntity | undefined,
  tree: ExpandTree,
  prefix: string,
): ExpandNode[] {
  const action = scope.action;
  if (tree.size === 0) return [];
  if (of && of.field(EXPAND_KEY)) {
    throw new MoonbaseError(
      "invalid",
      `Cannot ${action}: ${of.name} has a field named ${EXPAND_KEY}, which expanded records would hide; rename the field to expand its records`,
    );
  }
  const out: ExpandNode[] = [];
  for (const [key, sub] of tree) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (!of) {
      // Below an entity the API does not serve: absent, whatever it names.
      out.push({
        key,
        path,
        kind: "forward",
        field: key,
        entity: "",
        served: false,
        children: planLevel(scope, undefined, sub, path),
      });
      continue;
    }
    const f = of.field(key);
    if (f?.type === "relation" && f.foreign_key) {
      const found = scope.lookup(f.foreign_key.entity);
      const target = found && isExposed(found, found.name) &&
          found.type !== "view" && scope.canUse(found, "get")
        ? found
        : undefined;
      out.push({
        key,
        path,
        kind: "forward",
        field: key,
        entity: target?.name ?? f.foreign_key.entity,
        served: target !== undefined,
        children: planLevel(scope, target, sub, path),
      });
      continue;
    }
    const back = backRelation(scope, of, key);
    if (!back) unknownPath(action, path, of.name);
    out.push({
      key,
      path,
      kind: "back",
      field: back.field,
      entity: back.entity.name,
      served: back.usable,
      children: planLevel(
        scope,
        back.usable ? back.entity : undefined,
        sub,
        path,
      ),
    });
  }
  return out;
}
