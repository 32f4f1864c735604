/**
 * Realtime: every subscription of a client shares one Server-Sent Events
 * stream (`GET /api/v1/realtime?topics=…`, read with `fetch`, so it works
 * wherever `fetch` streams: browsers, Deno, Node 20+, Bun). A change of the
 * topics, or of the token (a login, a refresh, a logout), reopens the
 * stream with `lastEventId`, so no event is lost or repeated; so does a
 * dropped connection, after a backoff.
 *
 * Over 350 lines, one idea: the client's one realtime stream; kept whole
 * because subscriptions, reconnection and token changes share that stream's
 * state.
 *
 * @module
 */

import { LocalAuthStore } from "./auth_store.ts";
import { MoonbaseError } from "./errors.ts";
import { SETTLE_MS } from "./session.ts";
import type { Transport } from "./transport.ts";
import type { Names, RealtimeEvent } from "./types.ts";

/** Options of a subscription. */
export interface SubscribeOptions {
  /** Related records to include in each event's record (`author,comments_via_post`). */
  expand?: Names;
  /**
   * Called when the stream is refused after the subscription started (a
   * rule now refuses it, the token ended): the subscription stays and
   * resumes after the next change of the token or of the topics.
   */
  onError?: (error: MoonbaseError) => void;
  /**
   * Called when the server could not give every missed event (the client
   * was away too long): reload what you show.
   */
  onReset?: () => void;
  /**
   * Called with `"live"` each time a stream confirms the subscription (at
   * first, and again after every reopening), and with `"reconnecting"` when
   * the stream dropped and is being reopened after a backoff: what a "Live"
   * indicator shows.
   */
  onStatus?: (status: "live" | "reconnecting") => void;
}

/** Ends a subscription. */
export type Unsubscribe = () => void;

/** Options of the realtime connection. */
export interface RealtimeOptions {
  /** Waits before reconnecting, in ms, one per attempt (the last repeats). */
  backoff?: readonly number[];
  /** A stream silent this long (ms) is taken for dead and reopened (default 45 000: three missed pings). */
  idleTimeout?: number;
}

interface Listener {
  key: string;
  callback: (event: RealtimeEvent<unknown>) => void;
  expand: string[];
  onError?: (error: MoonbaseError) => void;
  onReset?: () => void;
  onStatus?: (status: "live" | "reconnecting") => void;
}

interface Waiter {
  listener: Listener;
  resolve: () => void;
  reject: (err: MoonbaseError) => void;
}

interface Message {
  event: string;
  data: string;
  id?: string;
}

const BACKOFF = [250, 500, 1000, 2000, 5000, 10_000];

/** Statuses that will not change by trying again with the same topics and token. */
const FATAL = new Set([400, 401, 403, 404, 405, 501]);

/**
 * How long a stream refused with 401 waits for a new token before the
 * store drops the refused one, where the store is not shared by tabs (a
 * `LocalAuthStore` in a browser waits for another tab's token first,
 * `SETTLE_MS`, and then drops it at once): a refresh revokes the old token before its
 * answer brings the new one, and the server may end the stream in between.
 */
const REFUSED_GRACE_MS = 2500;

function splitNames(names: Names | undefined): string[] {
  if (names === undefined) return [];
  const list = typeof names === "string" ? names.split(",") : [...names];
  return list.map((n) => n.trim()).filter((n) => n !== "");
}

function unref(timer: unknown): void {
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } })
    .Deno;
  if (typeof timer === "number" && deno?.unrefTimer) deno.unrefTimer(timer);
  else (timer as { unref?: () => void }).unref?.();
}

/** Calls `fn`, reporting a throw without stopping the caller. */
function safely(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    // A listener's bug must not stop the stream or the other listeners.
    queueMicrotask(() => {
      throw err;
    });
  }
}

/** The one realtime connection of a client. */
export class Realtime {
  readonly #t: Transport;
  readonly #backoff: readonly number[];
  readonly #idleMs: number;
  readonly #listeners = new Set<Listener>();
  #waiters: Waiter[] = [];
  /** The id of the last event received: where a reopened stream resumes. */
  #lastEventId: string | undefined;
  /** The open (or opening) stream. */
  #abort: AbortController | undefined;
  /** What the open stream was opened with. */
  #openedWith = "";
  #token = "";
  /** The topics the open stream's `ready` confirmed. */
  #ready = new Set<string>();
  #attempt = 0;
  /** How many streams were opened: a failure's wait ends stale past it. */
  #opens = 0;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #scheduled = false;
  /** Refused until something changes (topics or token). */
  #halted = false;
  #closed = false;

  /** Made by `Moonbase`. */
  constructor(transport: Transport, options: RealtimeOptions = {}) {
    this.#t = transport;
    this.#backoff = options.backoff?.length ? options.backoff : BACKOFF;
    this.#idleMs = options.idleTimeout ?? 45_000;
    transport.authStore.onChange((token) => {
      if (this.#listeners.size === 0 || token === this.#token) return;
      this.#halted = false;
      this.#attempt = 0;
      this.#schedule();
    });
  }

  /** Whether a stream is open or opening. */
  get connected(): boolean {
    return this.#abort !== undefined;
  }

  /** The id of the last event received (where a reopened stream resumes). */
  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  /** Adds a subscription; resolves once the server confirmed it. */
  subscribe(
    key: string,
    callback: (event: RealtimeEvent<unknown>) => void,
    options: SubscribeOptions = {},
  ): Promise<Unsubscribe> {
    if (this.#closed) {
      return Promise.reject(
        new MoonbaseError(0, "Cannot subscribe: the client was closed"),
      );
    }
    const listener: Listener = {
      key,
      callback,
      expand: splitNames(options.expand),
      onError: options.onError,
      onReset: options.onReset,
      onStatus: options.onStatus,
    };
    this.#listeners.add(listener);
    const unsubscribe = () => this.#remove(listener);
    return new Promise<Unsubscribe>((resolve, reject) => {
      this.#waiters.push({
        listener,
        resolve: () => resolve(unsubscribe),
        reject,
      });
      this.#halted = false;
      this.#schedule();
    });
  }

  /** Ends every subscription and the stream. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters) {
      w.reject(new MoonbaseError(0, "Cannot subscribe: the client was closed"));
    }
    this.#waiters = [];
    this.#listeners.clear();
    this.#stop();
  }

  #remove(listener: Listener): void {
    if (!this.#listeners.delete(listener)) return;
    this.#waiters = this.#waiters.filter((w) => w.listener !== listener);
    this.#schedule();
  }

  /** The `topics` value the listeners need (a topic's expansions merged). */
  #topics(): string {
    const byKey = new Map<string, Set<string>>();
    for (const l of this.#listeners) {
      const paths = byKey.get(l.key) ?? new Set<string>();
      for (const p of l.expand) paths.add(p);
      byKey.set(l.key, paths);
    }
    return [...byKey].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map((
      [key, paths],
    ) =>
      paths.size === 0
        ? key
        : `${key}?expand=${encodeURIComponent([...paths].sort().join(","))}`
    ).join(",");
  }

  /** Reopens the stream soon (several changes in a row open it once). */
  #schedule(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      clearTimeout(this.#retry);
      this.#retry = undefined;
      void this.#reconcile();
    });
  }

  #stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
    this.#openedWith = "";
    this.#ready = new Set();
    clearTimeout(this.#retry);
    clearTimeout(this.#idle);
  }

  async #reconcile(): Promise<void> {
    const topics = this.#topics();
    if (topics === "") return this.#stop();
    if (this.#halted) return;
    const token = await this.#t.freshToken();
    const wanted = `${token}\n${topics}`;
    if (this.#abort && wanted === this.#openedWith) {
      // Already open with these topics: a new waiter of one is confirmed.
      this.#confirm();
      return;
    }
    this.#stop();
    this.#open(topics, token, wanted);
  }

  #open(topics: string, token: string, wanted: string): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#openedWith = wanted;
    this.#token = token;
    const waiting = [...this.#waiters];
    const opened = ++this.#opens;
    void this.#run(topics, token, abort).catch((err) => {
      if (abort.signal.aborted) return; // closed by us: a new one is on its way
      this.#failed(err, token, waiting, opened);
    });
  }

  async #run(
    topics: string,
    token: string,
    abort: AbortController,
  ): Promise<void> {
    const res = await this.#t.open("GET", "/api/v1/realtime", {
      query: { topics, lastEventId: this.#lastEventId },
      auth: token === "" ? "none" : { token },
      signal: abort.signal,
      headers: { accept: "text/event-stream" },
    });
    const body = res.body;
    if (!body) throw new MoonbaseError(0, "Cannot subscribe: no stream");
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    this.#watch(abort);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.#watch(abort);
        buffer += value.replace(/\r\n?/g, "\n");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const m = parseMessage(block);
          if (m) this.#message(m);
          if (abort.signal.aborted) return;
        }
      }
    } finally {
      clearTimeout(this.#idle);
      reader.releaseLock();
    }
    if (abort.signal.aborted) return;
    // The server ended the stream (a restart, a drain): resume.
    throw new MoonbaseError(0, "Cannot keep the realtime stream: it ended");
  }

  /** Reopens a stream that stays silent past the idle timeout. */
  #watch(abort: AbortController): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      if (this.#abort === abort) {
        abort.abort();
        this.#abort = undefined;
        this.#openedWith = "";
        this.#later();
      }
    }, this.#idleMs);
    unref(this.#idle);
  }

  /** Resolves the waiters whose topic the stream confirmed. */
  #confirm(): void {
    const done = this.#waiters.filter((w) => this.#ready.has(w.listener.key));
    if (done.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve();
  }

  #message(m: Message): void {
    if (m.event === "ready") {
      const data = JSON.parse(m.data) as { topics?: string[] };
      this.#ready = new Set(data.topics ?? []);
      this.#attempt = 0;
      this.#confirm();
      for (const l of [...this.#listeners]) {
        if (l.onStatus && this.#ready.has(l.key)) {
          safely(() => l.onStatus!("live"));
        }
      }
      return;
    }
    if (m.event === "reset") {
      for (const l of [...this.#listeners]) {
        if (l.onReset) safely(l.onReset);
      }
      return;
    }
    if (m.event === "error") {
      const data = JSON.parse(m.data) as { status?: number; error?: string };
      throw new MoonbaseError(
        data.status ?? 0,
        data.error ?? "Cannot keep the realtime stream",
      );
    }
    if (m.event === "create" || m.event === "update" || m.event === "delete") {
      if (m.id !== undefined) this.#lastEventId = m.id;
      const event = JSON.parse(m.data) as RealtimeEvent<unknown>;
      const one = `${event.entity}/${event.id}`;
      for (const l of [...this.#listeners]) {
        if (l.key === event.entity || l.key === one) {
          safely(() => l.callback(event));
        }
      }
    }
  }

  /**
   * A stream that could not open or broke off: the `opened`-th, with
   * `token`, for `waiting`. `settled`: a 401 already waited for another
   * tab's token (below).
   */
  #failed(
    err: unknown,
    token: string,
    waiting: Waiter[],
    opened: number,
    settled = false,
  ): void {
    // A wait below ended after another stream opened (the token or the
    // topics changed): that one has this one's waiters and decides; this
    // one must not touch its state (it would run on, unseen, beside the
    // next: every event twice).
    if (opened !== this.#opens) return;
    this.#abort = undefined;
    this.#openedWith = "";
    this.#ready = new Set();
    const error = err instanceof MoonbaseError
      ? err
      : new MoonbaseError(0, `Cannot keep the realtime stream: ${err}`, {
        cause: err,
      });
    if (this.#t.authStore.token !== token) {
      // The token changed meanwhile (a refresh revoked the one this stream
      // had): not the subscriptions' failure; reopen with the new one.
      this.#schedule();
      return;
    }
    const refreshes = error.status === 401 && token !== ""
      ? this.#t.refreshes()
      : undefined;
    if (refreshes) {
      // This client's own refresh revoked the token and its answer (the
      // new token) is on its way: decide once it is here.
      void refreshes.then(() =>
        this.#failed(err, token, waiting, opened, settled)
      );
      return;
    }
    // Only in a browser: elsewhere (no other tabs) `changedFrom` answers at
    // once, and the grace below still keeps the token for another client
    // sharing the store (a refresh's answer a moment after the revocation).
    const store = this.#t.authStore;
    if (
      error.status === 401 && token !== "" && !settled &&
      store instanceof LocalAuthStore && "document" in globalThis
    ) {
      // Another tab's refresh may have revoked it, its token not seen here
      // yet (LocalAuthStore.changedFrom): decide once it came or did not.
      void store.changedFrom(token, SETTLE_MS).then(() =>
        this.#failed(err, token, waiting, opened, true)
      );
      return;
    }
    const pending = waiting.filter((w) => this.#waiters.includes(w));
    const refused = error.status === 401 && token !== "";
    if (pending.length > 0) {
      // A subscription that never started fails as a call would.
      this.#waiters = this.#waiters.filter((w) => !pending.includes(w));
      for (const w of pending) {
        this.#listeners.delete(w.listener);
        w.reject(error);
      }
      if (!refused) {
        if (this.#listeners.size > 0) this.#schedule();
        return;
      }
      // A refused token: as a call's 401 it is dropped (below), and the
      // subscriptions that started hear it, rather than the stream being
      // opened with it again.
    }
    if (FATAL.has(error.status)) {
      // Until the topics or the token change (a refused token is dropped
      // from the store below, which reopens the stream without it).
      this.#halted = true;
      for (const l of [...this.#listeners]) {
        if (l.onError) safely(() => l.onError!(error));
      }
      if (refused) {
        const store = this.#t.authStore;
        if (settled) {
          // Another tab had its moment (above) and stored no successor.
          if (store.token === token) store.clear();
        } else {
          const grace = setTimeout(() => {
            if (store.token === token) void this.#t.refused(token);
          }, REFUSED_GRACE_MS);
          unref(grace);
        }
      }
      return;
    }
    this.#later();
  }

  /** Reopens after the backoff of this attempt. */
  #later(): void {
    if (this.#closed || this.#listeners.size === 0) return;
    for (const l of [...this.#listeners]) {
      if (l.onStatus) safely(() => l.onStatus!("reconnecting"));
    }
    const base =
      this.#backoff[Math.min(this.#attempt, this.#backoff.length - 1)];
    this.#attempt++;
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#reconcile();
    }, base * (0.8 + Math.random() * 0.4));
    unref(this.#retry);
  }
}

/** One SSE message of a block of lines, or undefined for a comment or `retry:`. */
export function parseMessage(block: string): Message | undefined {
  let event = "message";
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (data.length === 0) return undefined;
  return { event, data: data.join("\n"), ...(id !== undefined && { id }) };
}
