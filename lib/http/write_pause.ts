/**
 * A pause of every write request of this process (a restore replacing the
 * data): while it lasts, requests other than GET, HEAD and OPTIONS answer
 * 503 with `Retry-After` before they reach a route (lib/http/handler.ts).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

/** Paused writes of one process. */
export class WritePause {
  #reason: string | undefined;

  /** Why writes are paused, or undefined when they are not. */
  get reason(): string | undefined {
    return this.#reason;
  }

  /**
   * Pauses writes for `reason` until the returned function is called; 409
   * when a pause is on already (one restore at a time).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { WritePause } from "moonbase/lib/http/write_pause.ts";
   * const pause = new WritePause();
   * const end = pause.begin("a restore is replacing the data");
   * assert.throws(() => pause.check("POST"), /Cannot write: a restore/);
   * pause.check("GET");
   * end();
   * pause.check("POST");
   * ```
   */
  begin(reason: string): () => void {
    if (this.#reason !== undefined) {
      throw new MoonbaseError(
        "conflict",
        `Cannot pause writes: ${this.#reason} already; wait for it to end`,
      );
    }
    this.#reason = reason;
    return () => {
      this.#reason = undefined;
    };
  }

  /** Throws the 503 for a request of `method` while writes are paused. */
  check(method: string): void {
    if (this.#reason === undefined) return;
    if (method === "GET" || method === "HEAD" || method === "OPTIONS") return;
    throw new MoonbaseError(
      "unavailable",
      `Cannot write: ${this.#reason}; retry in a moment`,
      null,
      { "retry-after": "5" },
    );
  }
}
