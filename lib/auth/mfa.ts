/**
 * Multi-factor logins: a first login that needs a second factor leaves a
 * row in `mb_mfas` (its `mfa_id`, the user, the method it used and the
 * password generation it saw) and answers 401 with `{mfa_id}`; a second
 * login by another method that carries the `mfa_id` takes the row and gets
 * the token (complete_login.ts decides when). An `mfa_id` is bound to its
 * user, lives `auth.mfa.duration` seconds, is single use, and allows 5
 * logins that carry it: each is counted before its credential is checked
 * (`attempt`), so parallel guesses get no more than 5 comparisons.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { invalidFields, MoonbaseError } from "../errors.ts";
import { randomToken } from "../ids.ts";
import type { Entity } from "../records/entity.ts";

/** Failed second logins that end an `mfa_id`. */
export const MFA_ATTEMPTS = 5;

const BAD_MFA =
  "Cannot log in: invalid or expired mfa_id; log in again from the first step";

/** A first login waiting for its second. */
export interface PendingLogin {
  userId: string;
  /** The method of the first login. */
  method: string;
  /** The password generation the first login saw. */
  gen: number;
}

/** The `mfa_id` of a body: undefined when absent (null and "" count as absent), 400 when not a string. */
export function mfaIdOf(body: Record<string, unknown>): string | undefined {
  const v = body.mfa_id;
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string" || v.length > 64) {
    throw invalidFields(
      { mfa_id: { code: "invalid", message: "Must be a string" } },
      "Cannot log in: mfa_id must be a string",
    );
  }
  return v;
}

/** First logins waiting for a second factor. */
export class MfaChallenges {
  #storage: Storage;
  #now: () => number;

  /** `now` is the database's clock. */
  constructor(storage: Storage, now: () => number) {
    this.#storage = storage;
    this.#now = now;
  }

  /** Records a first login; returns its `mfa_id`. */
  async start(
    entity: Entity,
    userId: string,
    method: string,
    gen: number,
    durationSec: number,
  ): Promise<string> {
    const id = randomToken(16);
    const now = this.#now();
    await this.#storage.transaction(async (tx) => {
      await tx.run(`DELETE FROM "mb_mfas" WHERE "expires" <= ?`, [now]);
      await tx.run(
        `INSERT INTO "mb_mfas" ("id", "entity_id", "user_id", "method", "gen", "attempts", "expires", "created") VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
        [id, entity.id, userId, method, gen, now + durationSec * 1000, now],
      );
    });
    return id;
  }

  /**
   * Counts one attempt against a live `mfa_id` before its credential is
   * checked, and answers its first login; 401 when there is none (unknown,
   * expired, spent, or out of attempts). Atomic: of parallel attempts no
   * more than `MFA_ATTEMPTS` ever get past this, so parallel guesses cannot
   * outrun the counter.
   */
  async attempt(entity: Entity, mfaId: string): Promise<PendingLogin> {
    const rows = await this.#storage.query(
      `UPDATE "mb_mfas" SET "attempts" = "attempts" + 1 WHERE "id" = ? AND "entity_id" = ? AND "attempts" < ? AND "expires" > ? RETURNING "user_id", "method", "gen"`,
      [mfaId, entity.id, MFA_ATTEMPTS, this.#now()],
    );
    if (!rows[0]) throw new MoonbaseError("unauthenticated", BAD_MFA);
    return pendingOf(rows[0]);
  }

  /**
   * A second login of user `userId` by `method` takes `mfaId` (its attempt
   * counted by `attempt` before the credential was checked): the first
   * login, with the row gone (single use). 401 for an unknown, expired or
   * spent `mfa_id` or another user's, 400 when the method is the first
   * login's.
   */
  async take(
    entity: Entity,
    mfaId: string,
    userId: string,
    method: string,
  ): Promise<PendingLogin> {
    const rows = await this.#storage.query(
      `SELECT "user_id", "method", "gen" FROM "mb_mfas" WHERE "id" = ? AND "entity_id" = ? AND "attempts" <= ? AND "expires" > ?`,
      [mfaId, entity.id, MFA_ATTEMPTS, this.#now()],
    );
    if (!rows[0]) throw new MoonbaseError("unauthenticated", BAD_MFA);
    const first = pendingOf(rows[0]);
    // Bound to its user: another user's login cannot use it (one message
    // for both, so an mfa_id tells nothing about whose it is).
    if (first.userId !== userId) {
      throw new MoonbaseError("unauthenticated", BAD_MFA);
    }
    if (first.method === method) {
      throw new MoonbaseError(
        "invalid",
        `Cannot log in: the second login must use another method than the first (${method}); use one of the others the entity offers (GET …/methods)`,
      );
    }
    const gone = await this.#storage.query(
      `DELETE FROM "mb_mfas" WHERE "id" = ? RETURNING "id"`,
      [mfaId],
    );
    if (gone.length === 0) throw new MoonbaseError("unauthenticated", BAD_MFA);
    return first;
  }
}

function pendingOf(r: Record<string, unknown>): PendingLogin {
  return {
    userId: String(r.user_id),
    method: String(r.method),
    gen: Number(r.gen),
  };
}
