/**
 * Where the client keeps its token and user: in memory (the default), or
 * in `localStorage` (a browser, when asked), shared by every tab of the
 * origin and kept across reloads. Listeners hear every change, from this
 * client or from another tab.
 *
 * @module
 */

import { expiresAt } from "./token.ts";
import type { RecordModel } from "./types.ts";

/** The signed-in user (an admin or a user of an auth entity). */
export type AuthRecord = RecordModel | { id: string; [field: string]: unknown };

/** Called with the new token and user after each change. */
export type AuthChange = (token: string, user: AuthRecord | null) => void;

/** What the client needs of a store. */
export interface AuthStore {
  /** The bearer token, `""` when signed out. */
  readonly token: string;
  /** The signed-in user, `null` when signed out. */
  readonly user: AuthRecord | null;
  /** A token is held and has not expired. */
  readonly isValid: boolean;
  /** Keeps a login's token and user (any record type: a generated one too). */
  save(token: string, user: object | null): void;
  /** Forgets the token and user. */
  clear(): void;
  /** Calls `cb` after each change; returns the function that stops it. */
  onChange(cb: AuthChange): () => void;
}

/** A store that keeps the token in memory (gone with the page or process). */
export class MemoryAuthStore implements AuthStore {
  #token = "";
  #user: AuthRecord | null = null;
  #listeners = new Set<AuthChange>();

  /** The bearer token, `""` when signed out. */
  get token(): string {
    return this.#token;
  }

  /** The signed-in user. */
  get user(): AuthRecord | null {
    return this.#user;
  }

  /** A token is held and has not expired. */
  get isValid(): boolean {
    return this.#token !== "" && expiresAt(this.#token) > Date.now();
  }

  /** Keeps a token and user and tells the listeners. */
  save(token: string, user: object | null): void {
    this.#token = token;
    this.#user = token === "" ? null : user as AuthRecord | null;
    this.changed();
  }

  /** Forgets the token and user. */
  clear(): void {
    this.save("", null);
  }

  /** Calls `cb` after each change; returns the function that stops it. */
  onChange(cb: AuthChange): () => void {
    this.#listeners.add(cb);
    return () => this.#listeners.delete(cb);
  }

  /** Tells the listeners (a subclass calls it after changing the state). */
  protected changed(): void {
    for (const cb of [...this.#listeners]) {
      try {
        cb(this.#token, this.#user);
      } catch (err) {
        // One listener's bug must not keep the others from hearing.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  /** Sets the state without telling (a subclass loading what it stored). */
  protected load(token: string, user: AuthRecord | null): void {
    this.#token = token;
    this.#user = token === "" ? null : user;
  }
}

/** How often `changedFrom` reads the stored session again. */
const SETTLE_POLL_MS = 50;

interface WebStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

interface StorageEventLike {
  key: string | null;
}

/**
 * A store in `localStorage` under `key`: kept across reloads, shared by the
 * tabs of the origin (a change in one reaches the others through the
 * `storage` event). Where `localStorage` is missing it stays in memory.
 */
export class LocalAuthStore extends MemoryAuthStore {
  readonly #key: string;
  readonly #storage: WebStorage | undefined;

  /** Loads what `key` holds. */
  constructor(key = "moonbase_auth") {
    super();
    this.#key = key;
    this.#storage = webStorage();
    this.#read();
    const target = globalThis as unknown as {
      addEventListener?: (
        type: string,
        cb: (e: StorageEventLike) => void,
      ) => void;
    };
    target.addEventListener?.("storage", (e) => {
      if (e.key !== this.#key && e.key !== null) return;
      this.#read();
      this.changed();
    });
  }

  /** Keeps a token and user, in `localStorage` too. */
  override save(token: string, user: object | null): void {
    try {
      if (token === "") this.#storage?.removeItem(this.#key);
      else this.#storage?.setItem(this.#key, JSON.stringify({ token, user }));
    } catch {
      // Storage full or refused (private mode): the session lives in memory.
    }
    super.save(token, user);
  }

  /** Reads the stored session again (another tab may have changed it). */
  reload(): void {
    this.#read();
  }

  /**
   * Resolves to `true` once the stored token is no longer `token` (another
   * tab stored a new one: the listeners hear it), or `false` after `ms`. A
   * tab may learn of another tab's write late: Chromium caches
   * `localStorage` in each tab's process and passes a write on after the
   * Web Lock that ordered the two tabs' refreshes, so a token the server
   * refuses may already have a successor on its way. Without a `document`
   * (no other tabs) it answers at once.
   */
  async changedFrom(token: string, ms: number): Promise<boolean> {
    const moved = () => {
      if (this.token !== token) return true;
      this.#read();
      if (this.token === token) return false;
      this.changed();
      return true;
    };
    if (moved()) return true;
    if (!("document" in globalThis)) return false;
    const until = Date.now() + ms;
    while (Date.now() < until) {
      await new Promise((ok) => setTimeout(ok, SETTLE_POLL_MS));
      if (moved()) return true;
    }
    return false;
  }

  #read(): void {
    let token = "";
    let user: AuthRecord | null = null;
    try {
      const raw = JSON.parse(this.#storage?.getItem(this.#key) ?? "null");
      if (raw && typeof raw.token === "string") {
        token = raw.token;
        user = raw.user ?? null;
      }
    } catch {
      // Unreadable: no session to resume.
    }
    this.load(token, user);
  }
}

function webStorage(): WebStorage | undefined {
  try {
    return (globalThis as unknown as { localStorage?: WebStorage })
      .localStorage;
  } catch {
    return undefined; // a sandboxed frame throws on access
  }
}
