/**
 * Access decisions for the rule modes (README "Access rules"). Admins pass every rule;
 * system entities are admin-only whatever their rules say.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../auth/sessions.ts";
import type { Entity } from "../schema/entity.ts";
import type { Operation } from "../schema/types.ts";

/** What a caller may do for one operation. */
export type Decision = { kind: "allow" } | { kind: "custom"; expr: string };

function deny(auth: AuthValue, op: Operation, entity: Entity): never {
  if (auth.type === "guest") {
    throw new MoonbaseError(
      "unauthenticated",
      `Cannot ${op} ${entity.name}: authentication required`,
    );
  }
  throw new MoonbaseError(
    "forbidden",
    `Cannot ${op} ${entity.name}: not allowed`,
  );
}

/**
 * Decides a record operation before touching data. `custom` rules are
 * returned for the caller to evaluate.
 *
 * @example
 * ```ts ignore
 * authorize(entity, "list", GUEST); // throws 401 unless the list rule is public
 * ```
 */
export function authorize(
  entity: Entity,
  op: Operation,
  auth: AuthValue,
): Decision {
  if (auth.type === "admin") return { kind: "allow" };
  if (entity.isSystem) deny(auth, op, entity);
  const rule = entity.rules[op];
  switch (rule.mode) {
    case "public":
      return { kind: "allow" };
    case "auth":
      return auth.type === "user" ? { kind: "allow" } : deny(auth, op, entity);
    case "custom":
      return { kind: "custom", expr: rule.expr };
    default:
      return deny(auth, op, entity);
  }
}
