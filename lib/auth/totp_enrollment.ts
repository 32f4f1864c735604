/**
 * TOTP enrolments (`totp/setup`, `totp/confirm`, `totp/disable`, and the
 * code of `login-totp`): one row per user in `mb_totp` with the secret
 * sealed under a key derived from the JWT secret (sealed.ts), whether it is
 * confirmed, and the last step a code was accepted for: a code is accepted
 * once, and no code of an earlier step after it (RFC 6238 section 5.2).
 *
 * Changing MB_JWT_SECRET makes the sealed secrets unreadable: those users'
 * codes no longer check out (they log in with another second factor, or an
 * admin removes their `mb_totp` row) and they set TOTP up again.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { Storage } from "../db/storage.ts";
import { invalidFields, MoonbaseError } from "../errors.ts";
import type { Entity } from "../records/entity.ts";
import type { DerivedKey } from "./code_hash.ts";
import { seal, unseal } from "./sealed.ts";
import { base32Encode, matchStep, otpauthUri } from "./totp.ts";

/** The answer of `totp/setup`. */
export interface TotpSetup {
  /** The secret in base32, for typing into an app. */
  secret: string;
  /** `otpauth://totp/…`, for a QR code. */
  uri: string;
}

/** TOTP enrolments of auth entities' users. */
export class TotpEnrollments {
  #storage: Storage;
  #key: DerivedKey;
  #now: () => number;

  /** `key` seals the secrets; `now` is the database's clock. */
  constructor(storage: Storage, key: DerivedKey, now: () => number) {
    this.#storage = storage;
    this.#key = key;
    this.#now = now;
  }

  /**
   * A stored secret in the open (base64url), for a backup; undefined when it
   * does not open under this server's key.
   */
  openSecret(
    entityId: string,
    userId: string,
    sealed: string,
  ): string | undefined {
    const plain = unseal(this.#key, sealed, context({ id: entityId }, userId));
    return plain && Buffer.from(plain).toString("base64url");
  }

  /** Seals a secret from `openSecret` under this server's key (a restore). */
  sealSecret(entityId: string, userId: string, plain: string): string {
    return seal(
      this.#key,
      new Uint8Array(Buffer.from(plain, "base64url")),
      context({ id: entityId }, userId),
    );
  }

  /** True when the user confirmed a TOTP enrolment. */
  async enrolled(entity: Entity, userId: string): Promise<boolean> {
    const rows = await this.#storage.query(
      `SELECT 1 AS "one" FROM "mb_totp" WHERE "entity_id" = ? AND "user_id" = ? AND "enrolled" = 1`,
      [entity.id, userId],
    );
    return rows.length > 0;
  }

  /**
   * A new secret for the user, waiting for `confirm` (a setup not yet
   * confirmed is replaced); 409 when the user is enrolled already.
   */
  async setup(
    entity: Entity,
    userId: string,
    account: string,
    issuer: string,
  ): Promise<TotpSetup> {
    const secret = crypto.getRandomValues(new Uint8Array(20));
    const sealed = seal(this.#key, secret, context(entity, userId));
    const changed = await this.#storage.run(
      `INSERT INTO "mb_totp" ("entity_id", "user_id", "secret", "enrolled", "last_step", "created") VALUES (?, ?, ?, 0, 0, ?)
       ON CONFLICT ("entity_id", "user_id") DO UPDATE SET "secret" = excluded."secret", "last_step" = 0, "created" = excluded."created"
       WHERE "mb_totp"."enrolled" = 0`,
      [entity.id, userId, sealed, this.#now()],
    );
    if (changed === 0) {
      throw new MoonbaseError(
        "conflict",
        "Cannot set up TOTP: it is enabled already; disable it first (totp/disable with a current code)",
      );
    }
    const text = base32Encode(secret);
    return { secret: text, uri: otpauthUri(issuer, account, text) };
  }

  /** Confirms a setup with a current code: the user is enrolled. 400 on a wrong code. */
  async confirm(entity: Entity, userId: string, code: unknown): Promise<void> {
    const match = await this.#check(entity, userId, codeOf(code), false);
    if (match === undefined) throw wrongCode("confirm TOTP");
    // The secret the code was checked against: a setup that replaced it
    // meanwhile leaves this confirm without effect (its secret is unproved).
    const n = await this.#storage.run(
      `UPDATE "mb_totp" SET "enrolled" = 1, "last_step" = ? WHERE "entity_id" = ? AND "user_id" = ? AND "enrolled" = 0 AND "last_step" < ? AND "secret" = ?`,
      [match.step, entity.id, userId, match.step, match.sealed],
    );
    if (n === 0) throw wrongCode("confirm TOTP");
  }

  /** Ends the enrolment, with a current code. 400 on a wrong code or when not enrolled. */
  async disable(entity: Entity, userId: string, code: unknown): Promise<void> {
    if (!await this.accept(entity, userId, codeOf(code))) {
      throw wrongCode("disable TOTP");
    }
    await this.#storage.run(
      `DELETE FROM "mb_totp" WHERE "entity_id" = ? AND "user_id" = ?`,
      [entity.id, userId],
    );
  }

  /**
   * True when `code` is a current code of the user's confirmed enrolment
   * that was not accepted before (then its step is spent).
   */
  async accept(entity: Entity, userId: string, code: string): Promise<boolean> {
    const match = await this.#check(entity, userId, code, true);
    if (match === undefined) return false;
    // Of two requests with one code, one moves the step.
    const n = await this.#storage.run(
      `UPDATE "mb_totp" SET "last_step" = ? WHERE "entity_id" = ? AND "user_id" = ? AND "enrolled" = 1 AND "last_step" < ? AND "secret" = ?`,
      [match.step, entity.id, userId, match.step, match.sealed],
    );
    return n === 1;
  }

  /**
   * The step `code` matches for the user's secret (enrolled or pending),
   * after the last used, and the sealed secret it was checked against.
   */
  async #check(
    entity: Entity,
    userId: string,
    code: string,
    enrolled: boolean,
  ): Promise<{ step: number; sealed: string } | undefined> {
    const rows = await this.#storage.query(
      `SELECT "secret", "last_step" FROM "mb_totp" WHERE "entity_id" = ? AND "user_id" = ? AND "enrolled" = ?`,
      [entity.id, userId, enrolled ? 1 : 0],
    );
    if (!rows[0]) return undefined;
    const sealed = String(rows[0].secret);
    const secret = unseal(this.#key, sealed, context(entity, userId));
    if (!secret) return undefined;
    const step = matchStep(
      secret,
      code,
      this.#now(),
      Number(rows[0].last_step),
    );
    return step === undefined ? undefined : { step, sealed };
  }
}

/** What a sealed secret is bound to: its row. */
function context(entity: Pick<Entity, "id">, userId: string): string {
  return `totp/${entity.id}/${userId}`;
}

/** The `code` of a body: 400 when it is not a string. */
export function codeOf(code: unknown): string {
  if (typeof code !== "string" || code === "" || code.length > 32) {
    throw invalidFields(
      { code: { code: "required", message: "Missing code" } },
      "Cannot check the code: code must be a non-empty string",
    );
  }
  return code;
}

function wrongCode(action: string): MoonbaseError {
  return invalidFields(
    { code: { code: "invalid", message: "Wrong or used code" } },
    `Cannot ${action}: the code is wrong, expired or used already; enter the current code of the authenticator app`,
  );
}
