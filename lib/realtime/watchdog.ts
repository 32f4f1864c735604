/**
 * Keeps open realtime connections honest: a connection whose token expired
 * or was revoked (logout, password change — here or on another instance)
 * ends within half a second of this instance knowing; one whose user was
 * deleted (or whose auth entity lost its API) within a second and a half.
 * The users behind open connections are read again every second, so rules
 * reading `auth.user` see current data. SSE connections get a heartbeat.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import type { TokenClaims } from "../auth/jwt.ts";
import { decodeRow } from "../records/codec.ts";
import { isExposed } from "../records/access.ts";
import type { Registry } from "../records/registry.ts";
import { tableOf } from "../schema/ddl.ts";
import type { Hub } from "./hub.ts";
import type { Subscriber } from "./subscriber.ts";

const TICK_MS = 500;
const USERS_EVERY = 2; // ticks

/** What the watchdog reads. */
export interface WatchdogEnv {
  storage: Storage;
  schemas: Registry;
  /** The database clock (ms). */
  now: () => number;
  isRevoked(claims: TokenClaims): boolean;
  /** SSE heartbeat period (ms). */
  heartbeatMs: number;
  onError(err: unknown): void;
}

/** Periodic checks of the hub's connections. */
export class Watchdog {
  readonly #hub: Hub;
  readonly #env: WatchdogEnv;
  #timer: ReturnType<typeof setInterval> | undefined;
  #ticks = 0;
  #lastBeat = 0;
  #refreshing = false;

  constructor(hub: Hub, env: WatchdogEnv) {
    this.#hub = hub;
    this.#env = env;
  }

  /** Starts ticking (never keeps the process alive by itself). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#lastBeat = performance.now();
    this.#timer = setInterval(() => this.tick(), TICK_MS);
    Deno.unrefTimer(this.#timer);
  }

  /** Stops ticking. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One pass (exposed for tests). */
  tick(): void {
    const subs = this.#hub.subscribers;
    if (subs.size === 0) return;
    const now = this.#env.now();
    for (const sub of [...subs]) {
      const c = sub.claims;
      if (!c) continue;
      if (c.exp * 1000 <= now) {
        sub.sink.end(401, "Cannot stay subscribed: the token expired");
      } else if (this.#env.isRevoked(c)) {
        sub.sink.end(401, "Cannot stay subscribed: the token was revoked");
      }
    }
    if (++this.#ticks % USERS_EVERY === 0 && !this.#refreshing) {
      this.#refreshing = true;
      this.#refreshUsers().catch(this.#env.onError).finally(() =>
        this.#refreshing = false
      );
    }
    const t = performance.now();
    if (t - this.#lastBeat >= this.#env.heartbeatMs) {
      this.#lastBeat = t;
      for (const sub of subs) sub.sink.heartbeat();
    }
  }

  /** Reads the users behind open connections again; ends those gone. */
  async #refreshUsers(): Promise<void> {
    const byEntity = new Map<string, Map<string, Subscriber[]>>();
    for (const sub of this.#hub.subscribers) {
      if (sub.auth.type === "guest") continue;
      let users = byEntity.get(sub.auth.entity);
      if (!users) byEntity.set(sub.auth.entity, users = new Map());
      const list = users.get(sub.auth.id) ?? [];
      list.push(sub);
      users.set(sub.auth.id, list);
    }
    for (const [name, users] of byEntity) {
      const entity = this.#env.schemas.byName(name);
      const admins = entity?.isSystem === true && entity.type === "auth";
      if (!entity || (!admins && !isExposed(entity, name, "auth"))) {
        for (const list of users.values()) {
          for (const s of list) {
            s.sink.end(401, "Cannot stay subscribed: the account is gone");
          }
        }
        continue;
      }
      const ids = [...users.keys()];
      const found = new Map<string, Record<string, unknown>>();
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const rows = await this.#env.storage.query(
          `SELECT * FROM ${tableOf(name)} WHERE "id" IN (${
            chunk.map(() => "?").join(", ")
          })`,
          chunk,
        );
        for (const row of rows) {
          found.set(
            String(row.id),
            decodeRow(entity.schema, row, this.#env.storage.dialect),
          );
        }
      }
      for (const [id, list] of users) {
        const user = found.get(id);
        for (const s of list) {
          if (!user) {
            s.sink.end(401, "Cannot stay subscribed: the account is gone");
          } else s.auth = { ...s.auth, user };
        }
      }
    }
  }
}
