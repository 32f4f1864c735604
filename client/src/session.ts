/**
 * Keeps the store's token alive: it is refreshed a while before it
 * expires (a quarter of its lifetime, at most five minutes before), by one
 * refresh at a time — in the client, and across the tabs of a browser
 * sharing a `localStorage` store (a Web Lock, where the browser has them;
 * the tab that waited takes the token the other one stored). A token the
 * server refuses is dropped. Times are the server's: the difference between
 * the clocks is read from each token this client gets fresh (its `iat`), so
 * a device whose clock is off neither refreshes in a loop (ahead: every new
 * token looks due at once) nor too late (behind: the token expired first).
 *
 * @module
 */

import { type AuthStore, LocalAuthStore } from "./auth_store.ts";
import { MoonbaseError } from "./errors.ts";
import { claimsOf } from "./token.ts";
import type { AuthResult } from "./types.ts";

/** Longest single timer (setTimeout fires at once past 2^31 - 1 ms). */
const MAX_TIMER_MS = 86_400_000;
/**
 * How long a token the server refused waits for another tab's successor
 * before it is dropped (see `LocalAuthStore.changedFrom`).
 */
export const SETTLE_MS = 1500;
/** A refresh that failed without an answer is tried again after this. */
const RETRY_MS = 60_000;

/** How the refresher calls the server. */
export type RefreshCall = (
  path: string,
  token: string,
) => Promise<AuthResult>;

interface Locks {
  request<T>(name: string, cb: () => Promise<T>): Promise<T>;
}

function webLocks(): Locks | undefined {
  const nav = (globalThis as { navigator?: { locks?: Locks } }).navigator;
  return nav?.locks && typeof nav.locks.request === "function"
    ? nav.locks
    : undefined;
}

function unref(timer: unknown): void {
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } })
    .Deno;
  if (typeof timer === "number" && deno?.unrefTimer) deno.unrefTimer(timer);
  else (timer as { unref?: () => void }).unref?.();
}

/** When a token should be refreshed (ms since the epoch), or undefined when never. */
export function refreshDue(token: string): number | undefined {
  const c = claimsOf(token);
  if (typeof c.exp !== "number" || c.imp !== undefined) return undefined;
  const life = typeof c.iat === "number" ? c.exp - c.iat : 3600;
  const before = Math.min(300, Math.max(1, life / 4));
  return (c.exp - before) * 1000;
}

/** The refresh route of a token: the admins' or its auth entity's. */
export function refreshPath(token: string): string | undefined {
  const entity = claimsOf(token).entity;
  if (typeof entity !== "string" || entity === "") return undefined;
  return entity === "mb_admins"
    ? "/api/v1/sys/admins/refresh"
    : `/api/v1/auth/${encodeURIComponent(entity)}/refresh`;
}

/** The refresher of one client. */
export class Refresher {
  readonly #store: AuthStore;
  readonly #call: RefreshCall;
  readonly #lockName: string;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #unlisten: () => void;
  /** This device's clock minus the server's (ms), from the last fresh token. */
  #skew = 0;

  /** Watches `store`; `lockName` names the refresh across tabs. */
  constructor(store: AuthStore, call: RefreshCall, lockName: string) {
    this.#store = store;
    this.#call = call;
    this.#lockName = lockName;
    this.#unlisten = store.onChange(() => this.#schedule());
    this.#schedule();
  }

  /** Stops refreshing. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#unlisten();
  }

  /**
   * A token the server issued just now (a login's, a refresh's): how far
   * this device's clock is from the server's is read from its `iat`.
   */
  issued(token: string): void {
    const iat = claimsOf(token).iat;
    if (typeof iat === "number") this.#skew = Date.now() - iat * 1000;
  }

  /** When `token` is due by this device's clock, or undefined when never. */
  #due(token: string): number | undefined {
    const due = token === "" ? undefined : refreshDue(token);
    return due === undefined ? undefined : due + this.#skew;
  }

  /** Refreshes now when the token is due (before a call that sends it). */
  async ensureFresh(): Promise<void> {
    const due = this.#due(this.#store.token);
    if (due !== undefined && Date.now() >= due && this.#store.isValid) {
      await this.refresh();
    }
  }

  /** Refreshes the token now; one refresh at a time. */
  refresh(): Promise<void> {
    this.#running ??= this.#refreshOnce().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #refreshOnce(): Promise<void> {
    const before = this.#store.token;
    if (before === "") return;
    const run = async () => {
      // Another tab refreshed while this one waited for the lock: its token
      // is taken (the listeners hear it) but never written back, since that
      // tab may have ended the session since in a write not seen here yet.
      const store = this.#store;
      if (store instanceof LocalAuthStore) await store.changedFrom(before, 0);
      if (store.token !== before) return;
      const path = refreshPath(before);
      if (path === undefined) return;
      try {
        const r = await this.#call(path, before);
        if (this.#store.token === before) {
          this.issued(r.token);
          this.#store.save(r.token, r.user);
        }
      } catch (err) {
        if (err instanceof MoonbaseError && err.status === 401) {
          // Another tab's refresh may have revoked it, its token not here yet.
          if (
            store instanceof LocalAuthStore &&
            await store.changedFrom(before, SETTLE_MS)
          ) return;
          if (store.token === before) store.clear();
          return;
        }
        // No answer, or the server is unwell: the token still works for now.
        this.#arm(RETRY_MS);
      }
    };
    const locks = webLocks();
    if (locks) await locks.request(this.#lockName, run);
    else await run();
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    const due = this.#due(this.#store.token);
    if (due === undefined) return;
    this.#arm(Math.max(0, due - Date.now()));
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    const at = Date.now() + ms;
    const wait = (left: number) => {
      this.#timer = setTimeout(() => {
        const rest = at - Date.now();
        if (rest > 0) return wait(rest);
        if (this.#store.isValid) void this.refresh();
      }, Math.min(left, MAX_TIMER_MS));
      unref(this.#timer);
    };
    wait(ms);
  }
}
