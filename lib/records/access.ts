/**
 * The one home of access decisions on records: which entities the API
 * exposes, the rule modes (docs/guide/rules.md), the refusal, and the
 * read-only views. Admins pass every rule; system entities are admin-only
 * whatever their rules say.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { EntityType, Operation, Rule, Rules } from "../schema/types.ts";

/** What a caller may do for one operation. */
export type Decision = { kind: "allow" } | { kind: "custom"; expr: string };

/** What an access decision reads of an entity. */
export interface Guarded {
  readonly name: string;
  readonly type: EntityType;
  readonly isSystem: boolean;
  readonly hasApi: boolean;
  readonly rules: Readonly<Rules>;
}

/**
 * Refuses an operation: 401 for a guest (a token might help), 403 for
 * anyone else. The message names the rule that refused (`the add rule`,
 * by the operation names of the API), never what it read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GUEST } from "moonbase/lib/caller.ts";
 * import { deny } from "moonbase/lib/records/access.ts";
 * assert.throws(() => deny("posts", "list", GUEST), {
 *   code: "unauthenticated",
 *   message: "Cannot list posts: authentication required (the list rule refused a guest)",
 * });
 * const user = { id: "u1", entity: "users", type: "user" as const, user: { id: "u1" } };
 * assert.throws(() => deny("posts", "add", user), {
 *   code: "forbidden",
 *   message: "Cannot add posts: the add rule refused it",
 * });
 * ```
 */
export function deny(
  entity: string,
  op: Operation,
  auth: AuthValue,
  system = false,
): never {
  if (auth.type === "guest") {
    throw new MoonbaseError(
      "unauthenticated",
      `Cannot ${op} ${entity}: authentication required (${
        system ? "a system entity" : `the ${op} rule refused a guest`
      })`,
    );
  }
  throw new MoonbaseError(
    "forbidden",
    `Cannot ${op} ${entity}: ${
      system
        ? "a system entity is for admins only"
        : `the ${op} rule refused it`
    }`,
  );
}

/**
 * Whether the records API (and the auth and file routes built on it) serves
 * an entity under `name`: the exact name, an API, not a system entity, and
 * of `type` when one is asked for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isExposed } from "moonbase/lib/records/access.ts";
 * const e = { name: "posts", type: "base" as const, isSystem: false, hasApi: true };
 * assert.equal(isExposed(e, "posts"), true);
 * assert.equal(isExposed(e, "Posts"), false);
 * assert.equal(isExposed(e, "posts", "auth"), false);
 * assert.equal(isExposed(undefined, "posts"), false);
 * ```
 */
export function isExposed<
  E extends Pick<Guarded, "name" | "type" | "isSystem" | "hasApi">,
>(entity: E | undefined, name: unknown, type?: EntityType): entity is E {
  return entity !== undefined && entity.name === name && entity.hasApi &&
    !entity.isSystem && (type === undefined || entity.type === type);
}

/**
 * Refuses to serve a view that breaks the view rule (`refusal` says why,
 * from `Registry.viewRefusal`): 503 until an admin changes or deletes it.
 * Every reader of records (the API, the dashboard's rule trial) asks here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertServed } from "moonbase/lib/records/access.ts";
 * assert.throws(() => assertServed({ name: "v", type: "view" }, "reads mb_admins"), { code: "unavailable" });
 * assertServed({ name: "v", type: "view" }, undefined);
 * ```
 */
export function assertServed(
  entity: Pick<Guarded, "name" | "type">,
  refusal: string | undefined,
): void {
  if (entity.type === "view" && refusal !== undefined) {
    throw new MoonbaseError(
      "unavailable",
      `Cannot read view ${entity.name}: it reads what views may not read; an admin must change or delete it`,
    );
  }
}

/**
 * Refuses a write to a view (405 with `Allow: GET, HEAD`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertWritable } from "moonbase/lib/records/access.ts";
 * assert.throws(() => assertWritable({ name: "v", type: "view" }, "add"), { code: "method_not_allowed" });
 * assertWritable({ name: "v", type: "view" }, "list");
 * ```
 */
export function assertWritable(
  entity: Pick<Guarded, "name" | "type">,
  op: string,
): void {
  if (entity.type === "view" && op !== "list" && op !== "get") {
    throw new MoonbaseError(
      "method_not_allowed",
      `Cannot ${op} ${entity.name}: views are read-only`,
      null,
      { Allow: "GET, HEAD" },
    );
  }
}

/**
 * Decides a record operation before touching data, by the entity's rule or
 * by `rule` (a draft being tried). `custom` rules are returned for the
 * caller to evaluate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GUEST } from "moonbase/lib/caller.ts";
 * import { authorize } from "moonbase/lib/records/access.ts";
 * const open = { mode: "public" as const, expr: "" };
 * const rules = { list: open, get: open, add: open, update: open, delete: open };
 * const e = { name: "p", type: "base" as const, isSystem: false, hasApi: true, rules };
 * assert.deepEqual(authorize(e, "list", GUEST), { kind: "allow" });
 * assert.throws(() => authorize(e, "list", GUEST, { mode: "auth", expr: "" }), { code: "unauthenticated" });
 * ```
 */
export function authorize(
  entity: Guarded,
  op: Operation,
  auth: AuthValue,
  rule: Rule = entity.rules[op],
): Decision {
  if (auth.type === "admin") return { kind: "allow" };
  if (entity.isSystem) deny(entity.name, op, auth, true);
  switch (rule.mode) {
    case "public":
      return { kind: "allow" };
    case "auth":
      return auth.type === "user"
        ? { kind: "allow" }
        : deny(entity.name, op, auth);
    case "custom":
      return { kind: "custom", expr: rule.expr };
    default:
      return deny(entity.name, op, auth);
  }
}
