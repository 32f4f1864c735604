/// <reference lib="dom" />
/**
 * One realtime subscription of the dashboard: `mb.entity(name).subscribe`
 * on the client's one realtime connection, which follows the session (a
 * refreshed token, this tab's or another's, reopens it, resuming after the
 * last event; a token the server refuses ends the session unless a new one
 * comes first) and reopens a dropped stream with a backoff. This module
 * turns it into what the live indicator shows: connecting, live,
 * reconnecting, or off with the server's words.
 *
 * @module
 */

import { mb, type MoonbaseError, type RealtimeEvent } from "../../mb.ts";
import type { LiveChange } from "./live_apply.ts";

/** The stream as the live indicator shows it. */
export type LiveState = "connecting" | "live" | "reconnecting" | "off";

/** What a stream reports. */
export interface LiveHandlers {
  /** A record changed. */
  change(c: LiveChange): void;
  /** Events were missed (too old to resume): reload what is shown. */
  reset(): void;
  /** The connection's state, with the reason when it is off. */
  state(s: LiveState, why: string): void;
}

/**
 * A realtime subscription to one entity's records, each with the related
 * records of `expand` (as the table shows them).
 */
export class LiveStream {
  readonly #entity: string;
  readonly #expand: string;
  readonly #on: LiveHandlers;
  #unsubscribe: (() => void) | undefined;
  #stopped = false;
  /** Confirmations seen (a later one follows a gap or a new token). */
  #readies = 0;
  /** Whether an event came (the client resumes after the last one). */
  #resumable = false;

  constructor(entity: string, expand: string, on: LiveHandlers) {
    this.#entity = entity;
    this.#expand = expand;
    this.#on = on;
  }

  /** Subscribes (once). */
  start(): void {
    if (this.#unsubscribe || this.#stopped) return;
    this.#on.state("connecting", "");
    mb.entity(this.#entity).subscribe("*", (e) => this.#change(e), {
      expand: this.#expand,
      onStatus: (status) => {
        if (status === "reconnecting") {
          return this.#on.state("reconnecting", "");
        }
        this.#on.state("live", "");
        // Back with no event to resume after: changes may have been missed.
        if (this.#readies++ > 0 && !this.#resumable) this.#on.reset();
      },
      onReset: () => this.#on.reset(),
      onError: (err: MoonbaseError) => this.#on.state("off", err.message),
    }).then((stop) => {
      if (this.#stopped) stop();
      else this.#unsubscribe = stop;
    }).catch((err: unknown) => {
      if (this.#stopped) return;
      this.#on.state("off", err instanceof Error ? err.message : String(err));
    });
  }

  /** Ends the subscription for good. */
  stop(): void {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  #change(e: RealtimeEvent): void {
    this.#resumable = true;
    this.#on.change(e as LiveChange);
  }
}
