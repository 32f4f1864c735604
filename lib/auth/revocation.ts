/**
 * Token revocation shared through the database: single tokens (`jti`, on
 * logout and refresh) and per-user cutoffs (every token issued before a
 * moment, on password change). Each instance keeps the set in memory, adds
 * its own revocations at once, and polls for the others' twice a second.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import type { TokenClaims } from "./jwt.ts";

const POLL_MS = 400;
const MARGIN_MS = 5000;

/** Milliseconds since the epoch encoded in a UUIDv7 (`jti`). */
export function uuidTime(id: string): number {
  const hex = id.slice(0, 8) + id.slice(9, 13);
  return /^[0-9a-f]{12}$/.test(hex) ? parseInt(hex, 16) : 0;
}

interface Cutoff {
  cutoff: number;
  keep: string;
}

/** Revoked tokens and cutoffs. */
export class Revocations {
  #store: Storage;
  #jtis = new Map<string, number>();
  #cutoffs = new Map<string, Cutoff>();
  #since = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #polls = 0;
  #polling = false;

  /** Uses the storage's `mb_revoked` and `mb_cutoffs`. */
  constructor(store: Storage) {
    this.#store = store;
  }

  /** Loads the current state and starts polling. */
  async start(): Promise<void> {
    await this.poll(true);
    this.#timer = setInterval(() => this.poll().catch(() => {}), POLL_MS);
  }

  /** Stops polling. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Reads revocations made since the last poll (by any instance). */
  async poll(all = false): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const now = Date.now();
      const since = all ? 0 : this.#since - MARGIN_MS;
      const rows = await this.#store.query(
        `SELECT "jti", "exp" FROM "mb_revoked" WHERE "created" >= ? AND "exp" >= ?`,
        [since, Math.floor(now / 1000)],
      );
      for (const r of rows) this.#jtis.set(String(r.jti), Number(r.exp));
      const cuts = await this.#store.query(
        `SELECT "key", "cutoff", "keep_jti" FROM "mb_cutoffs" WHERE "created" >= ?`,
        [since],
      );
      for (const c of cuts) {
        // Cutoffs only move forward: a poll that read the table before this
        // instance's own newer revocation must not bring the older one back.
        const key = String(c.key), cutoff = Number(c.cutoff);
        const known = this.#cutoffs.get(key);
        if (known && known.cutoff > cutoff) continue;
        this.#cutoffs.set(key, { cutoff, keep: String(c.keep_jti) });
      }
      this.#since = now;
      if (++this.#polls % 150 === 0) await this.#prune(now);
    } finally {
      this.#polling = false;
    }
  }

  async #prune(now: number): Promise<void> {
    const sec = Math.floor(now / 1000);
    for (const [jti, exp] of this.#jtis) if (exp < sec) this.#jtis.delete(jti);
    await this.#store.run(`DELETE FROM "mb_revoked" WHERE "exp" < ?`, [
      sec - 60,
    ]);
  }

  /** Revokes one token everywhere. */
  async revoke(claims: TokenClaims): Promise<void> {
    this.#jtis.set(claims.jti, claims.exp);
    await this.#store.run(
      `INSERT INTO "mb_revoked" ("jti", "exp", "created") VALUES (?, ?, ?) ON CONFLICT ("jti") DO NOTHING`,
      [claims.jti, claims.exp, Date.now()],
    );
  }

  /** Revokes every token of a user issued until now, except `keepJti`. */
  async revokeUser(entity: string, sub: string, keepJti = ""): Promise<void> {
    const key = `${entity}/${sub}`;
    const cutoff = Date.now() + 1;
    this.#cutoffs.set(key, { cutoff, keep: keepJti });
    await this.#store.run(
      `INSERT INTO "mb_cutoffs" ("key", "cutoff", "keep_jti", "created") VALUES (?, ?, ?, ?)
       ON CONFLICT ("key") DO UPDATE SET "cutoff" = excluded."cutoff", "keep_jti" = excluded."keep_jti", "created" = excluded."created"`,
      [key, cutoff, keepJti, Date.now()],
    );
  }

  /** True when the token was revoked (alone or by a cutoff). */
  isRevoked(claims: TokenClaims): boolean {
    if (this.#jtis.has(claims.jti)) return true;
    const c = this.#cutoffs.get(`${claims.entity}/${claims.sub}`);
    return c !== undefined && claims.jti !== c.keep &&
      uuidTime(claims.jti) < c.cutoff;
  }
}
