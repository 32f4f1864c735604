/**
 * Account tokens: the single-use secrets of the mailed links that verify an
 * email, reset a password or confirm a new email (the flows:
 * account_mail.ts).
 *
 * - A token is `<id>_<secret>`: 32 hex digits naming its row, and 256
 *   random bits (43 base64url characters). Only the secret's SHA-256 is
 *   stored (`mb_account_tokens.hash`); the row is found by its id and the
 *   hashes are compared in constant time. A fast hash is enough: the secret
 *   is random and as long as the hash (as for API keys, api_keys.ts).
 * - It lives 3 days (verification) or 30 minutes (password reset, email
 *   change), by the database's clock.
 * - It is spent once: `spend` deletes its row, and of two racing spends one
 *   gets it.
 * - It carries a stamp of the user's email and password hash when it was
 *   made (`stampOf`); a token whose stamp no longer matches the user is
 *   dead, so any change of password or email (by any path: these flows,
 *   a PATCH, a script) ends every token made before it.
 * - A new token of a purpose replaces the user's earlier ones of it.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import type { Queryable, Row, Storage } from "../db/storage.ts";
import { randomToken, uuidv7 } from "../ids.ts";

/** What a token is for. */
export type TokenPurpose = "verification" | "password_reset" | "email_change";

/** How long a token of each purpose lives (ms). */
export const TOKEN_TTL_MS: Readonly<Record<TokenPurpose, number>> = {
  verification: 3 * 86_400_000,
  password_reset: 30 * 60_000,
  email_change: 30 * 60_000,
};

/** The table of tokens. */
export const ACCOUNT_TOKEN_TABLE = "mb_account_tokens";

const TOKEN_FORM = /^([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

/** A stored token, as `find` returns it (never the secret). */
export interface AccountToken {
  id: string;
  purpose: TokenPurpose;
  entityId: string;
  userId: string;
  /** The address the mail went to (for an email change: the new one). */
  email: string;
  stamp: string;
  /** Milliseconds since the epoch (database clock). */
  expires: number;
}

/** What a new token is bound to. */
export interface TokenSubject {
  purpose: TokenPurpose;
  entityId: string;
  userId: string;
  email: string;
  stamp: string;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Equal strings, compared in constant time (for equal lengths). */
export function sameSecret(a: string, b: string): boolean {
  const x = sha256(a), y = sha256(b);
  return timingSafeEqual(x, y);
}

/**
 * The stamp of a user's credentials: changes whenever the email or the
 * password hash does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stampOf } from "moonbase/lib/auth/account_tokens.ts";
 * const a = stampOf({ email: "a@x.test", password: "scrypt$1" });
 * assert.equal(a, stampOf({ email: "a@x.test", password: "scrypt$1" }));
 * assert.notEqual(a, stampOf({ email: "a@x.test", password: "scrypt$2" }));
 * assert.notEqual(a, stampOf({ email: "b@x.test", password: "scrypt$1" }));
 * ```
 */
export function stampOf(row: Row): string {
  const email = typeof row.email === "string" ? row.email : "";
  const hash = typeof row.password === "string" ? row.password : "";
  return sha256(`${email}\u0000${hash}`).toString("hex");
}

function tokenOf(r: Row): AccountToken {
  return {
    id: String(r.id),
    purpose: String(r.purpose) as TokenPurpose,
    entityId: String(r.entity_id),
    userId: String(r.user_id),
    email: String(r.email),
    stamp: String(r.stamp),
    expires: Number(r.expires),
  };
}

/**
 * Creates `mb_account_tokens` when missing (idempotent; instances starting
 * at once on one PostgreSQL may race on it: retried).
 */
export async function ensureAccountTables(store: Storage): Promise<void> {
  const text = store.dialect.columnType("text");
  const int = store.dialect.columnType("int");
  for (let attempt = 0;; attempt++) {
    try {
      await store.transaction(async (tx) => {
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS "${ACCOUNT_TOKEN_TABLE}" ("id" ${text} PRIMARY KEY, "hash" ${text} NOT NULL, "purpose" ${text} NOT NULL, "entity_id" ${text} NOT NULL, "user_id" ${text} NOT NULL, "email" ${text} NOT NULL, "stamp" ${text} NOT NULL, "expires" ${int} NOT NULL, "created" ${int} NOT NULL)`,
        );
        await tx.exec(
          `CREATE INDEX IF NOT EXISTS "mb_account_tokens_user" ON "${ACCOUNT_TOKEN_TABLE}" ("entity_id", "user_id")`,
        );
      });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

/** The tokens of one database. */
export class AccountTokens {
  #store: Storage;
  #now: () => number;
  #issued = 0;

  /** `now`: the database's clock (one time base for every instance). */
  constructor(store: Storage, now: () => number) {
    this.#store = store;
    this.#now = now;
  }

  /** Creates the tables when missing. */
  start(): Promise<void> {
    return ensureAccountTables(this.#store);
  }

  /**
   * Makes a token for `subject` inside `q`'s transaction (the user's
   * earlier tokens of the purpose go) and returns it: the only time the
   * secret exists outside the mail.
   */
  async issue(
    subject: TokenSubject,
    q: Queryable = this.#store,
  ): Promise<string> {
    const id = uuidv7().replaceAll("-", "");
    const secret = randomToken(32);
    const now = this.#now();
    await q.run(
      `DELETE FROM "${ACCOUNT_TOKEN_TABLE}" WHERE "entity_id" = ? AND "user_id" = ? AND "purpose" = ?`,
      [subject.entityId, subject.userId, subject.purpose],
    );
    await q.run(
      `INSERT INTO "${ACCOUNT_TOKEN_TABLE}" ("id", "hash", "purpose", "entity_id", "user_id", "email", "stamp", "expires", "created") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        sha256(secret).toString("hex"),
        subject.purpose,
        subject.entityId,
        subject.userId,
        subject.email,
        subject.stamp,
        now + TOKEN_TTL_MS[subject.purpose],
        now,
      ],
    );
    if (++this.#issued % 100 === 0) {
      await q.run(
        `DELETE FROM "${ACCOUNT_TOKEN_TABLE}" WHERE "expires" < ?`,
        [now],
      );
    }
    return `${id}_${secret}`;
  }

  /**
   * The live token `presented` stands for, if it is one of `purpose` for
   * the entity `entityId`: right secret (constant-time), not expired. Not
   * spent yet: the flow checks the user first, then `spend`s it.
   */
  async find(
    presented: unknown,
    purpose: TokenPurpose,
    entityId: string,
  ): Promise<AccountToken | undefined> {
    const m = typeof presented === "string" ? TOKEN_FORM.exec(presented) : null;
    if (!m) return undefined;
    const row = (await this.#store.query(
      `SELECT "id", "hash", "purpose", "entity_id", "user_id", "email", "stamp", "expires" FROM "${ACCOUNT_TOKEN_TABLE}" WHERE "id" = ?`,
      [m[1]],
    ))[0];
    if (!row) return undefined;
    const stored = Buffer.from(String(row.hash), "hex");
    const given = sha256(m[2]);
    if (stored.length !== given.length || !timingSafeEqual(stored, given)) {
      return undefined;
    }
    const token = tokenOf(row);
    if (
      token.purpose !== purpose || token.entityId !== entityId ||
      token.expires <= this.#now()
    ) return undefined;
    return token;
  }

  /** Spends a token: true for the one caller that deleted its row. */
  async spend(token: AccountToken): Promise<boolean> {
    const rows = await this.#store.query(
      `DELETE FROM "${ACCOUNT_TOKEN_TABLE}" WHERE "id" = ? RETURNING "id"`,
      [token.id],
    );
    return rows.length > 0;
  }

  /** Removes every token of a user (after a change of password or email). */
  async forget(entityId: string, userId: string): Promise<void> {
    await this.#store.run(
      `DELETE FROM "${ACCOUNT_TOKEN_TABLE}" WHERE "entity_id" = ? AND "user_id" = ?`,
      [entityId, userId],
    );
  }
}
