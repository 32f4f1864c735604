/**
 * Checks of a caller's write that live above the records layer and that
 * every path of a rule-checked write must run (the records API, `{ as }`
 * in scripts and programs, and whatever comes next): they are named here
 * and handed in by the app (`lib/core.ts`, implemented in
 * `lib/auth/account_checks.ts`), and `RecordService` calls them from its
 * `create` and `update`, the one home of rule-checked writes.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { RequestOrigin } from "../http/request_scope.ts";
import type { Entity } from "./entity.ts";

/** The account rules of auth entities' records. */
export interface AccountChecks {
  /**
   * Before a create on `entity` by `auth` coming from `origin`: counts a
   * sign-up (an auth entity's record, created by anyone but an admin)
   * against the client's address; throws a 429 past the limit. Returns the
   * `X-RateLimit-*` headers for the answer, or undefined when nothing was
   * counted (not a sign-up, or no request: a program or a cron job has no
   * client address to count).
   */
  signup(
    entity: Entity,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<Record<string, string> | undefined>;
  /**
   * Before an update of record `id` of `entity`: the body to write. A user
   * changing their own password or email must give the current one in
   * `oldPassword` (400 otherwise; each check counts as a login attempt from
   * `origin`); `oldPassword` and an unchanged email are dropped.
   */
  change(
    entity: Entity,
    id: string,
    body: Record<string, unknown>,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<Record<string, unknown>>;
}
