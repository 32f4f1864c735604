/**
 * Dependency order of schemas, for an export and for the changes of an
 * import: an entity after the entities its relation fields point to, a view
 * after the entities its `view_query` names.
 *
 * @module
 */

import { physicalName } from "../db/storage.ts";

/** What the order reads of a schema (a stored one, or an import's raw object). */
export interface Orderable {
  name?: unknown;
  type?: unknown;
  fields?: unknown;
  view_query?: unknown;
}

/** The entity a relation field points to (lower case), if it is one. */
export function relationTarget(field: unknown): string | undefined {
  if (!field || typeof field !== "object") return undefined;
  const f = field as { type?: unknown; foreign_key?: { entity?: unknown } };
  if (f.type !== "relation") return undefined;
  const entity = f.foreign_key?.entity;
  return typeof entity === "string" ? entity.toLowerCase() : undefined;
}

/** True when `query` names `name` (or its table) as a word. */
function names(query: string, name: string): boolean {
  // Names are [A-Za-z0-9_]: nothing to escape in a pattern.
  return [name, physicalName(name)].some((n) =>
    new RegExp(`(^|[^A-Za-z0-9_])${n}([^A-Za-z0-9_]|$)`, "i").test(query)
  );
}

/**
 * The indexes of `schemas` in dependency order. A cycle of relations (A
 * points to B, B to A) cannot be ordered: the edge that closes it is left
 * out (the one back to the entity met first, the earlier in `schemas`,
 * which so comes after the others of its cycle); an import creates such
 * entities without the relation fields that close the cycle and adds those
 * once every entity exists. A self-relation is no
 * dependency. Names a view's query merely mentions order it too (the
 * order reads the query as text).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dependencyOrder } from "moonbase/lib/records/schema_order.ts";
 * const rel = (entity: string) => ({ name: "r", type: "relation", foreign_key: { entity } });
 * const order = dependencyOrder([
 *   { name: "v", type: "view", view_query: "SELECT id FROM posts" },
 *   { name: "posts", type: "base", fields: [rel("users")] },
 *   { name: "users", type: "auth", fields: [] },
 * ]);
 * assert.deepEqual(order, [2, 1, 0]);
 * ```
 */
export function dependencyOrder(schemas: readonly Orderable[]): number[] {
  const at = new Map<string, number>();
  schemas.forEach((s, i) => {
    if (typeof s.name === "string") at.set(s.name.toLowerCase(), i);
  });
  const deps = schemas.map((s, i) => {
    const out: number[] = [];
    if (Array.isArray(s.fields)) {
      for (const f of s.fields) {
        const j = at.get(relationTarget(f) ?? "");
        if (j !== undefined && j !== i && !out.includes(j)) out.push(j);
      }
    }
    if (s.type === "view" && typeof s.view_query === "string") {
      const q = s.view_query;
      schemas.forEach((o, j) => {
        if (j !== i && typeof o.name === "string" && names(q, o.name)) {
          out.push(j);
        }
      });
    }
    return out;
  });
  const state = new Uint8Array(schemas.length); // 0 new, 1 open, 2 placed
  const order: number[] = [];
  const visit = (i: number) => {
    state[i] = 1;
    // An open dependency closes a cycle: that edge is left out.
    for (const j of deps[i]) if (state[j] === 0) visit(j);
    state[i] = 2;
    order.push(i);
  };
  for (let i = 0; i < schemas.length; i++) if (state[i] === 0) visit(i);
  return order;
}
