/// <reference lib="dom" />
/**
 * One realtime subscription of the dashboard: an `EventSource` on
 * `GET /api/v1/realtime?topics=<topic>&token=<admin token>` that follows
 * the session. A new token (the session's refresh, or another tab's) reopens
 * the stream with it, resuming after the last event seen; logging out
 * closes it. When the stream cannot be opened, one plain request asks the
 * server why (`EventSource` hides the status): 401 ends the session unless
 * a refresh brings a new token first, 400/403/404/501 turn live updates off
 * with the server's words, anything else is retried with a growing delay.
 *
 * @module
 */

import { effect } from "@preact/signals";
import { apiUrl } from "../../api.ts";
import type { LiveAction, LiveChange } from "./live_apply.ts";
import { session } from "../../session/session.ts";

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

const ACTIONS: readonly LiveAction[] = ["create", "update", "delete"];
/** First retry delay after a failed open; doubles up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;
/**
 * How long a 401 waits for a new token before ending the session: the
 * refresh revokes the old token before its answer brings the new one.
 */
const REFRESH_GRACE_MS = 2500;

/** Statuses after which retrying cannot help. */
const FINAL = new Set([400, 403, 404, 501]);

function parse(data: unknown): unknown {
  try {
    return typeof data === "string" ? JSON.parse(data) : null;
  } catch {
    return null; // not JSON: read as no message at all
  }
}

function asChange(data: unknown): LiveChange | null {
  const c = parse(data) as Partial<LiveChange> | null;
  if (
    !c || !ACTIONS.includes(c.action as LiveAction) ||
    typeof c.id !== "string" || !c.record || typeof c.record !== "object"
  ) return null;
  return c as LiveChange;
}

/** A realtime subscription to one topic, following the session's token. */
export class LiveStream {
  readonly #topic: string;
  readonly #on: LiveHandlers;
  #es: EventSource | null = null;
  #token = "";
  /** The id of the last event received (to resume from). */
  #last: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #retryMs = FIRST_RETRY_MS;
  #probe: AbortController | undefined;
  #unwatch: (() => void) | undefined;
  /** Streams that became ready (a later one may follow a gap). */
  #readies = 0;

  constructor(topic: string, on: LiveHandlers) {
    this.#topic = topic;
    this.#on = on;
  }

  /** Opens the stream (and reopens it whenever the token changes). */
  start(): void {
    this.#unwatch ??= effect(() => this.#follow(session.token.value));
  }

  /** Closes the stream for good. */
  stop(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#shut();
  }

  #follow(token: string): void {
    if (token === this.#token && (this.#es || this.#timer)) return;
    this.#token = token;
    this.#shut();
    if (!token) return this.#on.state("off", "Logged out");
    this.#open();
  }

  /** Closes the current stream and cancels pending retries and probes. */
  #shut(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#probe?.abort();
    this.#probe = undefined;
    this.#es?.close();
    this.#es = null;
  }

  #open(): void {
    this.#shut();
    const es = new EventSource(apiUrl("/realtime", {
      topics: this.#topic,
      token: this.#token,
      lastEventId: this.#last,
    }));
    this.#es = es;
    const mine = () => this.#es === es;
    es.addEventListener("ready", () => {
      if (!mine()) return;
      this.#retryMs = FIRST_RETRY_MS;
      this.#on.state("live", "");
      // Back after a gap with no event id to resume from: changes may
      // have been missed.
      if (this.#readies++ > 0 && this.#last === undefined) this.#on.reset();
    });
    es.addEventListener("reset", () => mine() && this.#on.reset());
    for (const action of ACTIONS) {
      es.addEventListener(action, (e) => {
        const m = e as MessageEvent;
        const c = mine() ? asChange(m.data) : null;
        if (!c) return;
        if (m.lastEventId) this.#last = m.lastEventId;
        this.#on.change(c);
      });
    }
    es.addEventListener("error", (e) => mine() && this.#failed(es, e));
  }

  #failed(es: EventSource, e: Event): void {
    if (e instanceof MessageEvent) {
      // The server's own `event: error` before it ends the stream.
      const d = parse(e.data) as { status?: number; error?: string } | null;
      if (d?.status === 401) {
        this.#shut();
        return this.#unauthorized();
      }
      // Otherwise EventSource reconnects by itself, resuming.
      return this.#on.state("reconnecting", d?.error ?? "");
    }
    this.#on.state("reconnecting", "");
    // CONNECTING: EventSource retries itself; CLOSED: it gave up (a status
    // other than 200, or not a stream): ask why.
    if (es.readyState === EventSource.CLOSED) {
      this.#shut();
      void this.#ask();
    }
  }

  async #ask(): Promise<void> {
    const ctl = new AbortController();
    this.#probe = ctl;
    let status = 0;
    let why = "";
    try {
      const res = await fetch(apiUrl("/realtime", { topics: this.#topic }), {
        headers: { authorization: `Bearer ${this.#token}` },
        signal: ctl.signal,
      });
      status = res.status;
      if (res.ok) await res.body?.cancel();
      else {
        // Not an envelope: the status alone decides below.
        why = (await res.json().catch(() => null) as { error?: string } | null)
          ?.error ?? "";
      }
    } catch {
      // offline, or shut meanwhile
    }
    if (this.#probe !== ctl) return; // shut or superseded meanwhile
    this.#probe = undefined;
    if (status === 401) return this.#unauthorized();
    if (FINAL.has(status)) {
      return this.#on.state("off", why || `The server answered ${status}.`);
    }
    this.#timer = setTimeout(() => this.#open(), this.#retryMs);
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }

  /** The token was refused: wait for a refreshed one, else end the session. */
  #unauthorized(): void {
    this.#on.state("reconnecting", "");
    const refused = this.#token;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (session.token.value === refused) session.expire(refused);
    }, REFRESH_GRACE_MS);
  }
}
