/**
 * Token revocation shared through the database: single tokens (`jti`, on
 * logout and refresh) and per-user cutoffs (every token issued before a
 * moment, on password change). Each instance keeps the set in memory and
 * adds its own revocations at once.
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
import { pgNotify } from "../db/pg_notify.ts";
import type { TokenClaims } from "./jwt.ts";

/** The NOTIFY channel of revocations. */
export const REVOCATION_CHANNEL = "mb_revocations";

/** Milliseconds since the epoch encoded in a UUIDv7 (`jti`). */
export function uuidTime(id: string): number {
  const hex = id.slice(0, 8) + id.slice(9, 13);
  return /^[0-9a-f]{12}$/.test(hex) ? parseInt(hex, 16) : 0;
}

interface Cutoff {
  cutoff: number;
  keep: string;
}

/** A revocation as sent in a notification. */
type News = { j: string; e: number } | { k: string; c: number; p: string };

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
      `SELECT "key", "cutoff", "keep_jti" FROM "mb_cutoffs" WHERE "seq" > ? AND "seq" <= ?`,
      range,
    );
    for (const c of cuts) {
      this.#cut(String(c.key), Number(c.cutoff), String(c.keep_jti));
    }
    this.#since = top;
    if (++this.#polls % 150 === 0) await this.#prune(now);
  }

  /** Cutoffs only move forward: an older one read late must not bring back a token. */
  #cut(key: string, cutoff: number, keep: string): void {
    const known = this.#cutoffs.get(key);
    if (known && known.cutoff > cutoff) return;
    this.#cutoffs.set(key, { cutoff, keep });
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
      typeof n.p === "string"
    ) this.#cut(n.k, n.c, n.p);
  }

  /** Runs one revocation's writes: the next sequence value, the row, the notification. */
  async #write(
    news: News,
    insert: (tx: Queryable, seq: number) => Promise<unknown>,
  ): Promise<void> {
    await this.#ensure();
    const pg = this.#store.dialect.name === "postgres";
    await this.#store.transaction(async (tx) => {
      const seq = Number(
        (await tx.query(
          `UPDATE "mb_seq" SET "value" = "value" + 1 WHERE "name" = 'revocation' RETURNING "value"`,
        ))[0].value,
      );
      await insert(tx, seq);
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
    await this.#write(
      { j: claims.jti, e: claims.exp },
      async (tx, seq) => {
        first = await tx.run(
          `INSERT INTO "mb_revoked" ("jti", "exp", "created", "seq") VALUES (?, ?, ?, ?) ON CONFLICT ("jti") DO NOTHING`,
          [claims.jti, claims.exp, this.#now(), seq],
        ) > 0;
      },
    );
    return first;
  }

  /** Revokes every token of a user issued until now, except `keepJti`. */
  async revokeUser(entity: string, sub: string, keepJti = ""): Promise<void> {
    const key = `${entity}/${sub}`;
    const cutoff = this.#now() + 1;
    this.#cutoffs.set(key, { cutoff, keep: keepJti });
    await this.#write(
      { k: key, c: cutoff, p: keepJti },
      (tx, seq) =>
        tx.run(
          `INSERT INTO "mb_cutoffs" ("key", "cutoff", "keep_jti", "created", "seq") VALUES (?, ?, ?, ?, ?)
       ON CONFLICT ("key") DO UPDATE SET "cutoff" = excluded."cutoff", "keep_jti" = excluded."keep_jti", "created" = excluded."created", "seq" = excluded."seq"`,
          [key, cutoff, keepJti, this.#now(), seq],
        ),
    );
  }

  /**
   * True when the user's sessions were ended (a cutoff, by a password
   * change) after `since` (ms), unless `jti` is the token the cutoff keeps.
   * Login and refresh ask after issuing: a token issued while the password
   * changed must not outlive the change.
   */
  endedAfter(
    entity: string,
    sub: string,
    since: number,
    jti?: string,
  ): boolean {
    const c = this.#cutoffs.get(`${entity}/${sub}`);
    return c !== undefined && jti !== c.keep && since < c.cutoff;
  }

  /** True when the token was revoked (alone or by a cutoff). */
  isRevoked(claims: TokenClaims): boolean {
    if (this.#jtis.has(claims.jti)) return true;
    const c = this.#cutoffs.get(`${claims.entity}/${claims.sub}`);
    return c !== undefined && claims.jti !== c.keep &&
      uuidTime(claims.jti) < c.cutoff;
  }
}

/**
 * Adds the `seq` columns to `mb_revoked` and `mb_cutoffs` and the counter
 * row (idempotent; rows from before have `seq` 0 and are read by the first
 * poll). Two instances starting at once may race: retried.
 */
async function ensureSequence(store: Storage): Promise<void> {
  const int = store.dialect.columnType("int");
  const text = store.dialect.columnType("text");
  for (let attempt = 0;; attempt++) {
    try {
      await store.transaction(async (tx) => {
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS "mb_seq" ("name" ${text} PRIMARY KEY, "value" ${int} NOT NULL)`,
        );
        await tx.run(
          `INSERT INTO "mb_seq" ("name", "value") VALUES ('revocation', 0) ON CONFLICT ("name") DO NOTHING`,
        );
        for (const table of ["mb_revoked", "mb_cutoffs"]) {
          if (!(await hasColumn(tx, store, table, "seq"))) {
            await tx.exec(
              `ALTER TABLE "${table}" ADD COLUMN "seq" ${int} NOT NULL DEFAULT 0`,
            );
          }
          await tx.exec(
            `CREATE INDEX IF NOT EXISTS "${table}_seq" ON "${table}" ("seq")`,
          );
        }
      });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

async function hasColumn(
  tx: Queryable,
  store: Storage,
  table: string,
  column: string,
): Promise<boolean> {
  const rows = store.dialect.name === "postgres"
    ? await tx.query(
      `SELECT 1 AS "one" FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`,
      [table, column],
    )
    : (await tx.query(`SELECT "name" FROM pragma_table_info(?)`, [table]))
      .filter((r) => r.name === column);
  return rows.length > 0;
}
