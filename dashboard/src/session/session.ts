/// <reference lib="dom" />
/**
 * The admin session: the token lives in `localStorage`, so it survives a
 * reload and is shared by every tab; it is refreshed a few minutes before it
 * expires (one tab refreshes, under a Web Lock, and the others pick the new
 * token up from the `storage` event). An expired or revoked token ends the
 * session everywhere and sends the admin to the login form, which then
 * returns to the page they were on.
 *
 * @module
 */

import { signal } from "@preact/signals";

const KEY = "mb_admin_session";
/** Refresh this long before `exp`. */
const REFRESH_BEFORE_MS = 5 * 60_000;
/**
 * Longest single timer: browsers run a `setTimeout` longer than 2^31 - 1 ms
 * (24.8 days; `--tokenTtl` allows a year) at once, which made every refresh
 * schedule the next one immediately (a refresh loop). Longer waits are
 * chained.
 */
const MAX_TIMER_MS = 86_400_000;

/** The admin record as login returns it. */
export interface AdminUser {
  id: string;
  email: string;
  [key: string]: unknown;
}

interface Stored {
  token: string;
  user: AdminUser;
}

/** Seconds since the epoch at which a JWT expires (0 when unreadable). */
export function tokenExpiry(token: string): number {
  try {
    const part = token.split(".")[1] ?? "";
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp : 0;
  } catch {
    return 0; // not a JWT: treated as expired
  }
}

function load(): Stored | null {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) ?? "null") as Stored | null;
    if (!s || typeof s.token !== "string") return null;
    if (tokenExpiry(s.token) * 1000 <= Date.now()) return null;
    return s;
  } catch {
    return null; // unreadable or storage off: no session to resume
  }
}

class Session {
  /** The bearer token ("" when logged out). */
  readonly token = signal("");
  /** The logged-in admin. */
  readonly user = signal<AdminUser | null>(null);
  /** Why the last session ended (shown on the login form). */
  readonly endedReason = signal("");
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    const s = load();
    if (s) this.#set(s, false);
    addEventListener("storage", (e) => {
      if (e.key !== KEY) return;
      const next = load();
      if (next) this.#set(next, false);
      else this.#clear(false, "");
    });
  }

  /** Starts a session from a `{token, user}` answer (login, setup, refresh). */
  start(data: { token: string; user: AdminUser }): void {
    this.endedReason.value = "";
    this.#set(data, true);
  }

  /**
   * Ends the session because the server refused `refused` (by default the
   * current token). A token that another tab stored meanwhile is taken
   * instead: its refresh revoked the refused one, and a request sent in
   * between must not log every tab out.
   */
  expire(refused: string = this.token.value): void {
    const stored = load();
    if (stored && stored.token !== refused) return this.#set(stored, false);
    this.#clear(true, "Your session has ended: please log in again.");
  }

  /** Logs out: revokes the token on the server, then forgets it. */
  async logout(): Promise<void> {
    const token = this.token.value;
    this.#clear(true, "");
    if (!token) return;
    try {
      await fetch("/api/v1/sys/admins/logout", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
    } catch {
      // offline: the token still expires on its own
    }
  }

  /** Refreshes the token now (one tab at a time). */
  async refresh(): Promise<void> {
    const before = this.token.value;
    if (!before) return;
    const run = async () => {
      const current = load();
      // Another tab refreshed meanwhile: take its token.
      if (current && current.token !== before) return this.#set(current, false);
      const res = await fetch("/api/v1/sys/admins/refresh", {
        method: "POST",
        headers: { authorization: `Bearer ${before}` },
      }).catch(() => null);
      if (!res) return this.#schedule(60_000); // offline: try again later
      if (res.status === 401) return this.expire();
      if (!res.ok) return this.#schedule(60_000);
      const env = await res.json() as { data: Stored };
      this.#set(env.data, true);
    };
    if (navigator.locks) await navigator.locks.request("mb-refresh", run);
    else await run();
  }

  #set(s: Stored, persist: boolean): void {
    if (persist) localStorage.setItem(KEY, JSON.stringify(s));
    this.token.value = s.token;
    this.user.value = s.user;
    const ms = tokenExpiry(s.token) * 1000 - Date.now();
    this.#schedule(Math.max(5_000, ms - REFRESH_BEFORE_MS));
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    const due = Date.now() + ms;
    const wait = (left: number) => {
      this.#timer = setTimeout(() => {
        const rest = due - Date.now();
        if (rest > 0) wait(rest);
        else void this.refresh();
      }, Math.min(left, MAX_TIMER_MS));
    };
    wait(ms);
  }

  #clear(persist: boolean, reason: string): void {
    clearTimeout(this.#timer);
    if (persist) localStorage.removeItem(KEY);
    this.endedReason.value = reason;
    this.token.value = "";
    this.user.value = null;
  }
}

/** The one session of this page. */
export const session: Session = new Session();
