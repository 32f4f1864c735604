/**
 * Revocations that tell the other isolates of the process once they are
 * committed (see link.ts): a token logged out through one isolate is refused
 * by every other before the logout is answered.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { Revocations } from "../auth/revocation.ts";
import type { TokenClaims } from "../auth/jwt.ts";
import type { PeerLink } from "./link.ts";

/** `Revocations` announcing each committed revocation on a `PeerLink`. */
export class AnnouncedRevocations extends Revocations {
  readonly #link: PeerLink;

  /** As `Revocations`, plus the link to announce on. */
  constructor(store: Storage, now: () => number, link: PeerLink) {
    super(store, now);
    this.#link = link;
  }

  override async revoke(claims: TokenClaims): Promise<boolean> {
    const first = await super.revoke(claims);
    // Also when another call revoked it first: that call may not have committed yet.
    this.#link.announce("revocations");
    return first;
  }

  override async revokeUser(
    entity: string,
    sub: string,
    keepJti = "",
  ): Promise<void> {
    await super.revokeUser(entity, sub, keepJti);
    this.#link.announce("revocations");
  }
}
