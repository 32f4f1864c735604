/// <reference lib="dom" />
/**
 * The admin session as pages see it: signals that follow the client's auth
 * store (`mb.authStore.onChange`). The client keeps the token in
 * `localStorage` (so it survives a reload and is shared by every tab),
 * refreshes it before it expires (one tab at a time, under a Web Lock; the
 * others take the new token from the `storage` event) and drops a token
 * the server refuses. A session that ends other than by logging out here
 * (expired, revoked, or logged out in another tab) says so on the login
 * form, which then returns to the page the admin was on.
 *
 * @module
 */

import { signal } from "@preact/signals";
import { mb } from "../mb.ts";

/** The admin record as login returns it. */
export interface AdminUser {
  id: string;
  email: string;
  [key: string]: unknown;
}

/** What the login form says after a session ended by itself. */
export const ENDED = "Your session has ended: please log in again.";

class Session {
  /** The bearer token ("" when logged out). */
  readonly token = signal("");
  /** The logged-in admin. */
  readonly user = signal<AdminUser | null>(null);
  /** Why the last session ended (shown on the login form). */
  readonly endedReason = signal("");
  #leaving = false;

  constructor() {
    // Expired while the dashboard was closed: nothing to resume.
    if (mb.authStore.token !== "" && !mb.authStore.isValid) {
      mb.authStore.clear();
    }
    this.#take(mb.authStore.token, mb.authStore.user);
    mb.authStore.onChange((token, user) => {
      if (token !== "") this.endedReason.value = "";
      else if (this.token.value !== "" && !this.#leaving) {
        this.endedReason.value = ENDED;
      }
      this.#take(token, user);
    });
  }

  /**
   * Logs out: forgets the token, then revokes it on the server. `reason`
   * is what the login form then says (none by default).
   */
  async logout(reason = ""): Promise<void> {
    this.#leaving = true;
    this.endedReason.value = reason;
    try {
      await mb.admins.logout();
    } catch {
      // Offline: the token is forgotten here and expires on its own.
    } finally {
      this.#leaving = false;
    }
  }

  #take(token: string, user: unknown): void {
    this.token.value = token;
    this.user.value = token === "" ? null : user as AdminUser | null;
  }
}

/** The one session of this page. */
export const session: Session = new Session();
