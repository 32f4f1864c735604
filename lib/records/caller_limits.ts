/**
 * What a caller may not do to records beyond what the rule says: set
 * `verified` (admins only), or sort a list checked row by row by a value a
 * client chooses (an oracle on hidden rows). The record service applies
 * both, for the API and `{ as }` alike.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { EntityType } from "../schema/types.ts";

/**
 * Only admins may set `verified` on an auth entity's records; for anyone
 * else the key is ignored like the other read-only keys, and a new `email`
 * makes the account unverified (an unchanged one was already dropped by
 * `lib/auth/account.ts`).
 */
export function writable(
  entity: { readonly type: EntityType },
  body: Record<string, unknown>,
  auth: AuthValue,
): Record<string, unknown> {
  if (entity.type !== "auth" || auth.type === "admin") return body;
  const { verified: _ignored, ...rest } = body;
  if (Object.hasOwn(rest, "email")) rest.verified = false;
  return rest;
}

/** Sort keys allowed under a list rule checked row by row. */
const PER_ROW_SORTS = new Set(["id", "created", "updated"]);

/**
 * Under a per-row list rule, sorting by a field the caller can set would
 * turn the scan budget into an oracle: whether the caller's own row shows up
 * after a cursor tells how many hidden rows lie between two chosen values.
 * Only `id`, `created` and `updated` (which no client chooses) may order
 * such a list.
 */
export function sortUnderPerRowRule(sort: string | null): void {
  if (sort === null) return;
  for (const part of sort.split(",")) {
    const name = part.trim().replace(/^[-+]/, "");
    if (name !== "" && !PER_ROW_SORTS.has(name)) {
      throw new MoonbaseError(
        "invalid",
        `Cannot sort by ${
          name.slice(0, 64)
        }: the list rule is checked row by row (not compiled to SQL); sort by id, created or updated, or write a rule that compiles to SQL`,
      );
    }
  }
}
