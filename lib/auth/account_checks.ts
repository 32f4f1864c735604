/**
 * The account rules as `RecordService` runs them on every rule-checked
 * write (`lib/records/write_checks.ts` names the shape): the sign-up
 * throttle per client address and the `oldPassword` rule, so the records
 * API and a script acting `{ as }` the caller get the same answers.
 *
 * @module
 */

import type { AccountChecks } from "../records/write_checks.ts";
import { checkAccountChange, touchesAccount } from "./account.ts";
import type { LoginLimiter } from "./rate_limit.ts";
import { passwordCheckThrottle, signupThrottle } from "./throttles.ts";

/** Where the first refused sign-up of a window is reported. */
export interface SignupLog {
  warn(message: string, data: Record<string, unknown>): void;
}

/**
 * The account checks over `limiter` (`mb_ratelimit`, shared with logins).
 *
 * @example
 * ```ts ignore
 * const records = new RecordService(schemas, rules, cursorKey, accountChecks(limiter, log));
 * ```
 */
export function accountChecks(
  limiter: LoginLimiter,
  log: SignupLog,
): AccountChecks {
  return {
    signup(entity, auth, origin) {
      // No request, no client: a program's or a cron job's own write.
      if (!origin) return Promise.resolve(undefined);
      return signupThrottle(
        limiter,
        origin.ip,
        entity,
        auth,
        () =>
          log.warn("sign-up rate limit hit", {
            ip: origin.ip,
            entity: entity.name,
            request_id: origin.requestId,
          }),
      );
    },
    change(entity, id, body, auth, origin) {
      if (!touchesAccount(entity, body)) return Promise.resolve(body);
      return checkAccountChange(
        entity,
        id,
        body,
        auth,
        origin ? () => passwordCheckThrottle(limiter, origin.ip) : undefined,
      );
    },
  };
}
