/**
 * Token revocation shared through the database: single tokens (`jti`, on
 * logout and refresh) and per-user cutoffs (on password change). Each
 * instance keeps the set in memory and adds its own revocations at once.
 *
 * A cutoff is a generation, not a time: each password change adds one to
 * the user's generation (`mb_cutoffs.gen`, counted by the database), every
 * token carries the generation it was issued in (`gen`), and a token of an
 * older generation is revoked (except the one the change keeps). No clock
 * takes part, so instances whose clocks disagree cannot revive a token or
 * refuse a fresh one. Tokens from before generations (no `gen` claim) end
 * at the user's next password change, and earlier cutoffs still apply to
 * them by time.
 *
 * Other instances learn of a revocation two ways: on PostgreSQL a NOTIFY
 * sent in the revoking transaction (applied on arrival, see
 * `lib/sync.ts`), and a poll as the safety net. The poll reads by a
 * database sequence, never by time: every revocation takes the next value
 * of a counter row (`mb_seq`), whose lock is held until commit, so values
 * become visible in order and without gaps, and a poll that reads rows
 * `seq > last seen` misses nothing, whatever the instances' clocks say.
 *
 * @module
 */

import type { Queryable, Storage } from "../db/storage.ts";
import { ensureSequence } from "./revocation_tables.ts";
import { pgNotify } from "../db/pg_notify.ts";
import type { TokenClaims } from "./jwt.ts";

/** The NOTIFY channel of revocations. */
export const REVOCATION_CHANNEL = "mb_revocations";

/** Milliseconds since the epoch encoded in a UUIDv7 (`jti`). */
export function uuidTime(id: string): number {
  const hex = id.slice(0, 8) + id.slice(9, 13);
  return /^[0-9a-f]{12}$/.test(hex) ? parseInt(hex, 16) : 0;
}

/** A user's password-change state: generation, time (for tokens without `gen`), kept token. */
export interface Cutoff {
  gen: number;
  cutoff: number;
  keep: string;
}

/**
 * True when `cutoff` ends the token: issued in an older generation (a
 * token without `gen`: once any generation was counted, or issued before
 * the cutoff's time), unless it is the token the change kept.
 */
export function endsToken(
  cutoff: Cutoff | undefined,
  claims: TokenClaims,
): boolean {
  if (cutoff === undefined || claims.jti === cutoff.keep) return false;
  return claims.gen === undefined
    ? cutoff.gen > 0 || uuidTime(claims.jti) < cutoff.cutoff
    : claims.gen < cutoff.gen;
}

/** A revocation as sent in a notification. */
type News =
  | { j: string; e: number }
  | { k: string; c: number; p: string; g: number };

/** Revoked tokens and cutoffs. */
export class Revocations {
  #store: Storage;
  #jtis = new Map<string, number>();
  #cutoffs = new Map<string, Cutoff>();
  /** The last sequence value read by a poll (-1: nothing read yet). */
  #since = -1;
  #polls = 0;
  #polling: Promise<void> | undefined;
  #again = false;
  #ready: Promise<void> | undefined;
  #now: () => number;

  /** Uses the storage's `mb_revoked`, `mb_cutoffs` and `mb_seq`; `now` is the time base in ms. */
  constructor(store: Storage, now: () => number = () => Date.now()) {
    this.#store = store;
    this.#now = now;
  }

  /** Adds what this needs to the system tables (idempotent) and loads the current state. */
  async start(): Promise<void> {
    await this.#ensure();
    await this.poll();
  }

  #ensure(): Promise<void> {
    this.#ready ??= ensureSequence(this.#store);
    return this.#ready;
  }

  /**
   * Reads revocations made since the last poll (by any instance). A poll
   * asked for while one runs runs again right after it (so a poll that
   * follows a notification or a reconnect always starts after it).
   */
  poll(): Promise<void> {
    if (this.#polling) {
      this.#again = true;
      return this.#polling;
    }
    this.#polling = (async () => {
      try {
        do {
          this.#again = false;
          await this.#pollOnce();
        } while (this.#again);
      } finally {
        this.#polling = undefined;
      }
    })();
    return this.#polling;
  }

  async #pollOnce(): Promise<void> {
    await this.#ensure();
    const top = Number(
      (await this.#store.query(
        `SELECT "value" FROM "mb_seq" WHERE "name" = 'revocation'`,
      ))[0]?.value ?? 0,
    );
    if (top === this.#since) return;
    // Every row up to `top` is committed (its counter update committed with it).
    const range = [this.#since, top];
    const now = this.#now();
    const rows = await this.#store.query(
      `SELECT "jti", "exp" FROM "mb_revoked" WHERE "seq" > ? AND "seq" <= ? AND "exp" >= ?`,
      [...range, Math.floor(now / 1000)],
    );
    for (const r of rows) this.#jtis.set(String(r.jti), Number(r.exp));
    const cuts = await this.#store.query(
      `SELECT "key", "gen", "cutoff", "keep_jti" FROM "mb_cutoffs" WHERE "seq" > ? AND "seq" <= ?`,
      range,
    );
    for (const c of cuts) this.#cut(String(c.key), cutoffOf(c));
    this.#since = top;
    if (++this.#polls % 150 === 0) await this.#prune(now);
  }

  /** Cutoffs only move forward: an older one read late must not bring back a token. */
  #cut(key: string, c: Cutoff): void {
    const known = this.#cutoffs.get(key);
    if (
      known &&
      (known.gen > c.gen || (known.gen === c.gen && known.cutoff > c.cutoff))
    ) return;
    this.#cutoffs.set(key, c);
  }

  async #prune(now: number): Promise<void> {
    const sec = Math.floor(now / 1000);
    for (const [jti, exp] of this.#jtis) if (exp < sec) this.#jtis.delete(jti);
    await this.#store.run(`DELETE FROM "mb_revoked" WHERE "exp" < ?`, [
      sec - 60,
    ]);
  }

  /**
   * Applies a notification from another instance (a payload of
   * `REVOCATION_CHANNEL`). It can only add revocations, never lift one.
   */
  apply(payload: string): void {
    const n = JSON.parse(payload) as Partial<Record<string, unknown>>;
    if (typeof n.j === "string" && typeof n.e === "number") {
      this.#jtis.set(n.j, n.e);
    } else if (
      typeof n.k === "string" && typeof n.c === "number" &&
      typeof n.p === "string" && Number.isSafeInteger(n.g)
    ) this.#cut(n.k, { gen: n.g as number, cutoff: n.c, keep: n.p });
  }

  /** Runs one revocation's writes: the next sequence value, the row, the notification. */
  async #write(
    insert: (tx: Queryable, seq: number) => Promise<News>,
  ): Promise<void> {
    await this.#ensure();
    const pg = this.#store.dialect.name === "postgres";
    await this.#store.transaction(async (tx) => {
      const seq = Number(
        (await tx.query(
          `UPDATE "mb_seq" SET "value" = "value" + 1 WHERE "name" = 'revocation' RETURNING "value"`,
        ))[0].value,
      );
      const news = await insert(tx, seq);
      if (pg) await pgNotify(tx, REVOCATION_CHANNEL, JSON.stringify(news));
    });
  }

  /**
   * Revokes one token everywhere. Resolves true only for the call that
   * revoked it first (on this instance, or in the database for every
   * instance): a token is spent once, so parallel refreshes or a logout
   * racing a refresh cannot each go on as if they had revoked it.
   */
  async revoke(claims: TokenClaims): Promise<boolean> {
    if (this.#jtis.has(claims.jti)) return false;
    this.#jtis.set(claims.jti, claims.exp);
    let first = false;
    await this.#write(async (tx, seq) => {
      first = await tx.run(
        `INSERT INTO "mb_revoked" ("jti", "exp", "created", "seq") VALUES (?, ?, ?, ?) ON CONFLICT ("jti") DO NOTHING`,
        [claims.jti, claims.exp, this.#now(), seq],
      ) > 0;
      return { j: claims.jti, e: claims.exp };
    });
    return first;
  }

  /**
   * Ends every token of a user issued until now, except `keepJti`: the
   * user's generation goes up by one (counted by the database).
   */
  async revokeUser(entity: string, sub: string, keepJti = ""): Promise<void> {
    const key = `${entity}/${sub}`;
    // Only for tokens without `gen`, and for instances that predate generations.
    const cutoff = this.#now() + 1;
    let next: Cutoff | undefined;
    await this.#write(async (tx, seq) => {
      const rows = await tx.query(
        `INSERT INTO "mb_cutoffs" ("key", "cutoff", "keep_jti", "created", "seq", "gen") VALUES (?, ?, ?, ?, ?, 1)
       ON CONFLICT ("key") DO UPDATE SET "cutoff" = excluded."cutoff", "keep_jti" = excluded."keep_jti", "created" = excluded."created", "seq" = excluded."seq", "gen" = "mb_cutoffs"."gen" + 1
       RETURNING "gen"`,
        [key, cutoff, keepJti, this.#now(), seq],
      );
      next = { gen: Number(rows[0].gen), cutoff, keep: keepJti };
      return { k: key, c: cutoff, p: keepJti, g: next.gen };
    });
    this.#cut(key, next!);
  }

  /**
   * The user's cutoff as the database holds it now (undefined: no password
   * change yet). Login and refresh issue tokens in this generation, so a
   * token issued on an instance that has not yet heard of a change is not
   * refused once it hears.
   */
  async current(entity: string, sub: string): Promise<Cutoff | undefined> {
    await this.#ensure();
    const key = `${entity}/${sub}`;
    const row = (await this.#store.query(
      `SELECT "gen", "cutoff", "keep_jti" FROM "mb_cutoffs" WHERE "key" = ?`,
      [key],
    ))[0];
    if (!row) return undefined;
    const c = cutoffOf(row);
    this.#cut(key, c);
    return c;
  }

  /** The user's generation as this instance knows it (no query). */
  known(entity: string, sub: string): number {
    return this.#cutoffs.get(`${entity}/${sub}`)?.gen ?? 0;
  }

  /** True when the token was revoked (alone or by a cutoff). */
  isRevoked(claims: TokenClaims): boolean {
    return this.#jtis.has(claims.jti) ||
      endsToken(this.#cutoffs.get(`${claims.entity}/${claims.sub}`), claims);
  }
}

function cutoffOf(row: Record<string, unknown>): Cutoff {
  return {
    gen: Number(row.gen ?? 0),
    cutoff: Number(row.cutoff),
    keep: String(row.keep_jti),
  };
}
