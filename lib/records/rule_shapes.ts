/**
 * The entities as rules and filters read them through relations
 * (`lib/rules/relations.ts` `Shapes`): each entity's readable fields (never
 * `password`), where its relation fields point, and its back-relations
 * (`<entity>_via_<field>`, resolved as `expand` resolves them:
 * `expand/plan.ts` `viaReadings`, `relationTo`). A rule reads every entity
 * (it is the admin's statement); a caller's filter only the entities it
 * could read itself (`readable`), and back-relations only from entities the
 * API serves (`visible`), as `expand` does.
 *
 * @module
 */

import type { EntityType, FieldDef } from "../schema/types.ts";
import type { ShapeEntity, ShapeField, Shapes } from "../rules/relations.ts";
import { relationTo, viaReadings } from "./expand/plan.ts";

/** What the shapes read of an entity (an `Entity` and a schema are both one). */
export interface ShapeSource {
  readonly name: string;
  readonly type: EntityType;
  readonly fields: readonly FieldDef[];
}

/** How to build the shapes of one expression. */
export interface ShapeWorld {
  /** An entity by name (any case). */
  find(name: string): ShapeSource | undefined;
  /** The entity of `record` (filters: of the bare names). */
  record?: ShapeSource;
  /**
   * The entities `auth.user` may come from (a request: the caller's; a
   * schema save: every auth entity, the first holding a name wins).
   */
  user?: readonly ShapeSource[];
  /** Filters: why a related entity's records may not be read (undefined: they may). */
  refusal?: (entity: ShapeSource) => string | undefined;
  /** Filters: whether a back-relation may name records of `entity`. */
  visible?: (entity: ShapeSource) => boolean;
}

/** Whether a relation field holds several ids (`"multiple": true`). */
function isMultiple(f: FieldDef): boolean {
  return (f as { multiple?: unknown }).multiple === true;
}

function shapeField(f: FieldDef): ShapeField {
  return f.type === "relation" && f.foreign_key
    ? { type: f.type, target: f.foreign_key.entity, multiple: isMultiple(f) }
    : { type: f.type };
}

/**
 * The {@link Shapes} of a world.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shapesOf, type ShapeSource } from "moonbase/lib/records/rule_shapes.ts";
 * import type { FieldDef } from "moonbase/lib/schema/types.ts";
 * const f = (name: string, type: FieldDef["type"], to?: string): FieldDef => ({
 *   id: name, name, type, required: false, unique: false,
 *   ...(to && { foreign_key: { entity: to, on_delete: "cascade" as const } }),
 * });
 * const posts: ShapeSource = { name: "posts", type: "base", fields: [f("id", "string"), f("author", "relation", "users")] };
 * const users: ShapeSource = { name: "users", type: "auth", fields: [f("id", "string"), f("password", "string")] };
 * const world = [posts, users];
 * const shapes = shapesOf({ find: (n) => world.find((e) => e.name === n), record: posts });
 * assert.deepEqual(shapes.record?.field("author"), { type: "relation", target: "users", multiple: false });
 * assert.equal(shapes.entity("users")?.field("password"), undefined);
 * assert.equal(shapes.back(shapes.entity("users")!, "posts_via_author")?.field, "author");
 * ```
 */
export function shapesOf(world: ShapeWorld): Shapes {
  const sources = new Map<ShapeEntity, readonly ShapeSource[]>();
  const made = new Map<string, ShapeEntity>();
  const shape = (of: readonly ShapeSource[]): ShapeEntity => {
    const key = of.map((s) => s.name.toLowerCase()).join("\0");
    const known = made.get(key);
    if (known) return known;
    const byName = new Map<string, FieldDef>();
    for (const s of of) {
      for (const f of s.fields) {
        if (f.name !== "password" && !byName.has(f.name)) byName.set(f.name, f);
      }
    }
    const refused = of.length === 1 ? world.refusal?.(of[0]) : undefined;
    const e: ShapeEntity = {
      name: of[0].name,
      fieldNames: [...byName.keys()],
      field: (name) => {
        const f = byName.get(name);
        return f ? shapeField(f) : undefined;
      },
      ...(refused !== undefined && { refused }),
    };
    made.set(key, e);
    sources.set(e, of);
    return e;
  };
  const user = world.user?.filter((u) => u.type === "auth");
  return {
    record: world.record && shape([world.record]),
    user: user && user.length > 0 ? shape(user) : undefined,
    entity: (name) => {
      const s = world.find(name);
      return s && s.type !== "view" ? shape([s]) : undefined;
    },
    back: (of, name) => {
      for (const { entity, field } of viaReadings(name)) {
        const e = world.find(entity);
        if (!e || e.type === "view") continue;
        if (world.visible && !world.visible(e)) continue;
        for (const parent of sources.get(of) ?? []) {
          if (
            relationTo(
              { field: (n) => e.fields.find((f) => f.name === n) },
              field,
              parent.name,
            )
          ) {
            return { entity: shape([e]), field };
          }
        }
      }
      return undefined;
    },
  };
}

/**
 * The names `record.<name>` of `entity` may read besides its fields: its
 * back-relations (`<entity>_via_<field>` for every relation field of the
 * world pointing at it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backNames, type ShapeSource } from "moonbase/lib/records/rule_shapes.ts";
 * const comments: ShapeSource = { name: "comments", type: "base", fields: [
 *   { id: "f1", name: "post", type: "relation", required: false, unique: false,
 *     foreign_key: { entity: "posts", on_delete: "cascade" } },
 * ] };
 * assert.deepEqual(backNames([comments], "posts"), ["comments_via_post"]);
 * ```
 */
export function backNames(
  world: readonly ShapeSource[],
  entity: string,
  visible: (e: ShapeSource) => boolean = () => true,
): string[] {
  const out: string[] = [];
  for (const e of world) {
    if (e.type === "view" || !visible(e)) continue;
    for (const f of e.fields) {
      if (
        f.type === "relation" &&
        f.foreign_key?.entity.toLowerCase() === entity.toLowerCase()
      ) out.push(`${e.name}_via_${f.name}`);
    }
  }
  return out;
}

/**
 * A set of names that also holds the names `also` accepts, without listing
 * them: the back-relations a rule or filter may read, which suggestions and
 * "has:" lists leave out (they name the fields).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NameSet } from "moonbase/lib/records/rule_shapes.ts";
 * const names = new NameSet(["title"], (n) => n === "comments_via_post");
 * assert.ok(names.has("title") && names.has("comments_via_post"));
 * assert.deepEqual([...names], ["title"]);
 * ```
 */
export class NameSet extends Set<string> {
  readonly #also: (name: string) => boolean;

  /** `shown`: the names listed; `also`: more names it holds. */
  constructor(shown: Iterable<string>, also: (name: string) => boolean) {
    super(shown);
    this.#also = also;
  }

  /** Whether `name` is shown or accepted by `also`. */
  override has(name: string): boolean {
    return super.has(name) || this.#also(name);
  }
}
