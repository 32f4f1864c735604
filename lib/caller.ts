/**
 * Who is calling: the value every layer that decides access passes around
 * (records, auth, files, http). A leaf module so that none of them has to
 * import another for it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GUEST } from "moonbase/lib/caller.ts";
 * assert.equal(GUEST.type, "guest");
 * assert.ok(Object.isFrozen(GUEST));
 * ```
 *
 * @module
 */

/** Who is calling. */
export interface AuthValue {
  /** Record id of the user or admin ("" for a guest). */
  id: string;
  /** Entity of the user (`mb_admins` for an admin, "" for a guest). */
  entity: string;
  type: "guest" | "user" | "admin";
  /** The user's record, without its password (null for a guest). */
  user: Record<string, unknown> | null;
  /**
   * Id of the session (token) the caller presented, when one was: a
   * password change keeps this session and ends the user's others.
   */
  session?: string;
  /**
   * Id of the API key the caller presented (`Authorization: Bearer mbk_…`),
   * when it was one: account changes refuse it (lib/auth/api_keys.ts).
   */
  key?: string;
}

/** The caller without a token. */
export const GUEST: AuthValue = Object.freeze({
  id: "",
  entity: "",
  type: "guest",
  user: null,
});
