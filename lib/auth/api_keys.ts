/**
 * API keys: long-lived bearer credentials an admin makes for a user of an
 * auth entity (or for an admin), for server-side jobs. `Authorization:
 * Bearer mbk_…` then acts as that user (every rule applies) or that admin.
 *
 * - A key is `mbk_<id>_<secret>`: the key's id (32 hex digits) and 256
 *   random bits (43 base64url characters). Only its SHA-256 is stored
 *   (`mb_api_keys.hash`); the key itself is shown once, when it is made.
 *   A fast hash is enough: the secret is random and as long as the hash,
 *   so a leaked table gives nothing to guess (a password needs a slow KDF
 *   only because people choose guessable ones). A keyed hash would add
 *   nothing but a dependence on the JWT secret (keys would die when it is
 *   rotated).
 * - The id in the key finds the row by its primary key; the hashes are
 *   then compared in constant time.
 * - No cache: each request with a key reads its row (one primary-key read,
 *   as each token request reads its user), so a deleted key fails at once
 *   on every instance and every isolate, whatever the notifications do.
 *   The deletion is also revoked as a token id (`mbk:<id>`), which ends the
 *   realtime streams opened with the key (their watchdog checks
 *   revocations, lib/realtime/watchdog.ts).
 * - A key dies with its user (each use reads the user; record ids are
 *   never reused) and when it expires. A password change does not end it.
 * - Keys are refused where a session is made, refreshed or ended, and on
 *   account routes (api_key_refusals.ts): a key is no session.
 *
 * @module
 */

import { createHash, timingSafeEqual } from "node:crypto";
import type { AuthValue } from "../caller.ts";
import { MoonbaseError } from "../errors.ts";
import { randomToken, uuidv7 } from "../ids.ts";
import type { Storage } from "../db/storage.ts";
import type { Registry } from "../records/registry.ts";
import { checkedKeyInput, keyEntity } from "./api_key_input.ts";
import type { TokenClaims } from "./jwt.ts";
import type { Revocations } from "./revocation.ts";

/** What every key starts with. */
export const API_KEY_PREFIX = "mbk_";

/** The table of keys. */
export const API_KEY_TABLE = "mb_api_keys";

const KEY_FORM = /^mbk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
const ID_FORM =
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Far in the future (9999-12-31): the `exp` of a key that never expires. */
const NEVER = 253402300799;

/** How often one isolate writes a key's `last_used` (ms). */
const TOUCH_EVERY = 60_000;

/** A key as the API shows it (never the key, never its hash). */
export interface ApiKeyInfo {
  id: string;
  name: string;
  entity: string;
  user_id: string;
  created: string;
  /** ISO 8601, or null for a key that never expires. */
  expires: string | null;
  /** Last use, to the minute (null: never used). */
  last_used: string | null;
}

/** A key just made: the only time `key` is seen. */
export interface CreatedApiKey extends ApiKeyInfo {
  key: string;
}

/** The caller a key stands for, and the claims a long-lived stream watches. */
export interface KeyCaller {
  auth: AuthValue;
  claims: TokenClaims;
}

/** The SHA-256 of a key, hex. */
function hashOf(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Constant-time equality of two hex digests. */
function sameHash(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function keyIdOf(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${
    hex.slice(16, 20)
  }-${hex.slice(20)}`;
}

function invalidKey(): MoonbaseError {
  return new MoonbaseError(
    "unauthenticated",
    "Cannot authenticate: invalid, expired or deleted API key",
  );
}

/**
 * Creates `mb_api_keys` when missing (idempotent; instances starting at
 * once on one PostgreSQL may race on it: retried).
 */
export async function ensureApiKeyTable(store: Storage): Promise<void> {
  const text = store.dialect.columnType("text");
  for (let attempt = 0;; attempt++) {
    try {
      await store.transaction(async (tx) => {
        await tx.exec(
          `CREATE TABLE IF NOT EXISTS "${API_KEY_TABLE}" ("id" ${text} PRIMARY KEY, "name" ${text} NOT NULL, "entity" ${text} NOT NULL, "user_id" ${text} NOT NULL, "hash" ${text} NOT NULL, "created" ${text} NOT NULL, "expires" ${text}, "last_used" ${text})`,
        );
      });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
}

function textOrNull(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function infoOf(row: Record<string, unknown>): ApiKeyInfo {
  return {
    id: String(row.id),
    name: String(row.name),
    entity: String(row.entity),
    user_id: String(row.user_id),
    created: String(row.created),
    expires: textOrNull(row.expires),
    last_used: textOrNull(row.last_used),
  };
}

const INFO_COLUMNS =
  `"id", "name", "entity", "user_id", "created", "expires", "last_used"`;

/** The keys of one database: make, list, delete, and resolve a presented key. */
export class ApiKeys {
  #store: Storage;
  #registry: Registry;
  #revocations: Revocations;
  #now: () => number;
  /** When this isolate last wrote each key's `last_used` (ms, `#now`). */
  #touched = new Map<string, number>();
  #pending = new Set<Promise<unknown>>();

  /** `now` is the time base in ms (the database's clock). */
  constructor(
    store: Storage,
    registry: Registry,
    revocations: Revocations,
    now: () => number,
  ) {
    this.#store = store;
    this.#registry = registry;
    this.#revocations = revocations;
    this.#now = now;
  }

  /** Creates the table when missing. */
  start(): Promise<void> {
    return ensureApiKeyTable(this.#store);
  }

  /**
   * Makes a key for `{name, entity, user_id, expires}` (`expires`: an ISO
   * 8601 time in the future, or null / absent for a key that never
   * expires). 400 with `data.fields` on anything wrong.
   */
  async create(body: Record<string, unknown>): Promise<CreatedApiKey> {
    const { name, entity, userId, expires, now } = await checkedKeyInput(
      body,
      this.#registry,
      this.#now,
    );
    const id = uuidv7();
    const key = `${API_KEY_PREFIX}${id.replaceAll("-", "")}_${randomToken(32)}`;
    const info: ApiKeyInfo = {
      id,
      name,
      entity: entity.name,
      user_id: userId,
      created: new Date(now).toISOString(),
      expires,
      last_used: null,
    };
    await this.#store.run(
      `INSERT INTO "${API_KEY_TABLE}" ("id", "name", "entity", "user_id", "hash", "created", "expires") VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [id, name, info.entity, userId, hashOf(key), info.created, expires],
    );
    return { ...info, key };
  }

  /**
   * Every live key, oldest first. Keys whose user or entity is gone can
   * never work again (record ids are never reused): they are deleted here.
   */
  async list(): Promise<ApiKeyInfo[]> {
    const rows = await this.#store.query(
      `SELECT ${INFO_COLUMNS} FROM "${API_KEY_TABLE}" ORDER BY "created", "id"`,
    );
    const live: ApiKeyInfo[] = [];
    const dead: string[] = [];
    for (const row of rows) {
      const info = infoOf(row);
      const e = this.#registry.byName(info.entity);
      const gone = e === undefined || e.name !== info.entity ||
        !(await e.recordExists(info.user_id));
      if (gone) dead.push(info.id);
      else live.push(info);
    }
    for (const id of dead) {
      await this.#store.run(`DELETE FROM "${API_KEY_TABLE}" WHERE "id" = ?`, [
        id,
      ]);
    }
    return live;
  }

  /**
   * Deletes a key (false: no such key). It fails at once everywhere (its
   * row is gone), and streams opened with it end (its id is revoked).
   */
  async remove(id: string): Promise<boolean> {
    if (!ID_FORM.test(id)) return false;
    const rows = await this.#store.query(
      `SELECT "entity", "user_id", "created" FROM "${API_KEY_TABLE}" WHERE "id" = ?`,
      [id],
    );
    if (rows.length === 0) return false;
    const gone = await this.#store.run(
      `DELETE FROM "${API_KEY_TABLE}" WHERE "id" = ?`,
      [id],
    );
    if (gone === 0) return false;
    this.#touched.delete(id);
    // An hour outlives any stream's reaction (its watchdog checks every
    // 500 ms); after that the row's absence alone is the refusal.
    const now = Math.floor(this.#now() / 1000);
    await this.#revocations.revoke({
      sub: String(rows[0].user_id),
      entity: String(rows[0].entity),
      jti: `mbk:${id}`,
      iat: now,
      exp: now + 3600,
    });
    return true;
  }

  /**
   * The caller a presented `Authorization: Bearer mbk_…` header stands for,
   * or 401: malformed, unknown, deleted or expired key, or its user or
   * entity gone (or the entity's API off).
   */
  async caller(header: string): Promise<KeyCaller> {
    const key = header.replace(/^Bearer\s+/i, "");
    const m = KEY_FORM.exec(key);
    if (!m) throw invalidKey();
    const id = keyIdOf(m[1]);
    const row = (await this.#store.query(
      `SELECT "entity", "user_id", "hash", "created", "expires" FROM "${API_KEY_TABLE}" WHERE "id" = ?`,
      [id],
    ))[0];
    if (!row || !sameHash(hashOf(key), String(row.hash))) throw invalidKey();
    const now = this.#now();
    const stored = textOrNull(row.expires);
    const expires = stored === null ? NaN : Date.parse(stored);
    if (expires <= now) throw invalidKey();
    const entity = keyEntity(this.#registry, row.entity);
    if (!entity) throw invalidKey();
    const userId = String(row.user_id);
    const user = await entity.read(userId);
    if (!user) throw invalidKey();
    this.#touch(id, now);
    return {
      auth: {
        id: userId,
        entity: entity.name,
        type: entity.isSystem ? "admin" : "user",
        user,
        key: id,
      },
      claims: {
        sub: userId,
        entity: entity.name,
        jti: `mbk:${id}`,
        iat: Math.floor(Date.parse(String(row.created)) / 1000) || 0,
        exp: Number.isNaN(expires) ? NEVER : Math.floor(expires / 1000),
        // A password change does not end a key (nor a stream opened with it).
        gen: Number.MAX_SAFE_INTEGER,
      },
    };
  }

  /** Writes `last_used`, at most once a minute per key and isolate, off the request path. */
  #touch(id: string, now: number): void {
    const last = this.#touched.get(id);
    if (last !== undefined && now - last < TOUCH_EVERY) return;
    if (this.#touched.size >= 10_000) this.#touched.clear();
    this.#touched.set(id, now);
    const write = this.#store.run(
      `UPDATE "${API_KEY_TABLE}" SET "last_used" = ? WHERE "id" = ?`,
      [new Date(now).toISOString(), id],
    ).catch(() => {
      // Only a hint for admins: a write lost to a busy or closing database
      // is retried at the key's next use a minute on.
      this.#touched.delete(id);
    });
    this.#pending.add(write);
    write.finally(() => this.#pending.delete(write));
  }

  /** Resolves once the `last_used` writes in flight are done (before the storage closes). */
  async settled(): Promise<void> {
    await Promise.all(this.#pending);
  }
}
