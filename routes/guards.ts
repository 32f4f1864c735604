/**
 * Small checks shared by route handlers.
 *
 * @module
 */

import { MoonbaseError } from "../lib/errors.ts";
import type { AuthValue } from "../lib/caller.ts";
import type { Context } from "../lib/http/context.ts";

/** Resolves the caller and requires an admin (guest → 401, user → 403). */
export async function requireAdmin(ctx: Context<unknown>): Promise<AuthValue> {
  const auth = await ctx.auth();
  if (auth.type === "admin") return auth;
  if (auth.type === "guest") {
    throw new MoonbaseError(
      "unauthenticated",
      "Cannot continue: admin authentication required",
    );
  }
  throw new MoonbaseError("forbidden", "Cannot continue: admins only");
}
