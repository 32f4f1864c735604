/**
 * The open connections of a server and the one sweeper that closes them:
 * a connection that sends no complete request head within the header
 * timeout, or no new request within the idle timeout after its last
 * response, is closed — unless a streamed response body is still being
 * written on it and its client keeps reading (a tracked body that asked
 * for no data during the idle timeout closes it too: progress.ts). Per
 * request the hot path only updates a counter, a timestamp and the last
 * response; timing is the sweeper's job.
 *
 * Connections are closed hard (never with hyper's graceful shutdown: a
 * connection stuck on a request body nobody reads ignores it, and once
 * asked it can no longer be closed by other means).
 *
 * @module
 */

import type { BodyDeadlines } from "./deadlines.ts";
import { lastPull } from "./progress.ts";

/** What a served connection looks like (`Deno.HttpServer` per connection). */
export interface ConnServer {
  finished: Promise<void>;
  /**
   * Closes Deno's server on the connection (its "http" resource). Needed
   * after `finished` rejected: Deno then leaves that resource open.
   */
  shutdown(): Promise<void>;
  ref(): void;
  unref(): void;
}

/** Time limits of connections, in milliseconds. */
export interface ConnLimits {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  /** Only sets the sweep period (body reads are swept too). */
  bodyTimeoutMs: number;
}

/** Time a finished response gets to leave before its connection is closed. */
export const GRACE_MS = 250;

/** Request info as the HTTP engine gives it (remoteAddr throws once done). */
type Info = { readonly remoteAddr: unknown };

/**
 * The abort "signal" handed to Deno's per-connection server: it keeps the
 * one listener Deno registers and calls it inside `try`, so closing a
 * connection that Deno is closing itself cannot throw an uncaught error.
 */
export class Closer {
  #fn: (() => void) | undefined;
  /** True once `close()` ran. */
  closed = false;
  readonly aborted = false;

  addEventListener(_type: string, fn: () => void): void {
    this.#fn = fn;
  }

  removeEventListener(): void {}

  /** Closes the connection now. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const fn = this.#fn;
    this.#fn = undefined;
    try {
      fn?.();
    } catch { /* already closed by Deno */ }
  }
}

/** One accepted connection. */
export class Connection {
  /** Requests whose handler is running. */
  inFlight = 0;
  /** Requests seen (0: the first request head has not arrived yet). */
  requests = 0;
  /** When the connection was accepted (performance.now()). */
  readonly opened: number;
  /** When the last handler returned (performance.now()). */
  last: number;
  /** The last response leaves a body unread (408, 413): close it soon. */
  closeSoon = false;
  /** The last request's info: tells whether its response is still sent. */
  info: Info | undefined;
  /** The last response (its streamed body may be tracked: progress.ts). */
  res: Response | undefined;
  /** Closes the connection. */
  readonly closer = new Closer();
  /** Deno's HTTP server on this one connection. */
  http: ConnServer | undefined;

  constructor(now: number) {
    this.opened = this.last = now;
  }

  /** True while the last response's body is still being written. */
  sending(): boolean {
    if (this.info === undefined) return false;
    try {
      void this.info.remoteAddr; // throws "Request closed" once it is done
      return true;
    } catch {
      return false;
    }
  }

  /** True when nothing runs or is sent on it for `ms` (it may be closed). */
  idleFor(now: number, ms: number): boolean {
    return this.inFlight === 0 && !this.closer.closed &&
      now - (this.requests === 0 ? this.opened : this.last) >= ms &&
      !this.sending();
  }

  /**
   * True when its tracked streamed response asked for no data for `ms`:
   * the client stopped reading it.
   */
  stalledFor(now: number, ms: number): boolean {
    if (this.inFlight !== 0 || this.closer.closed || !this.res) return false;
    const pulled = lastPull(this.res);
    return pulled !== undefined && now - pulled >= ms &&
      now - this.last >= ms && this.sending();
  }
}

/** The connections of one server, swept by one timer. */
/**
 * A count of open connections kept beyond one server (the isolates of one
 * process share one): `add` applies a change and returns the new total.
 */
export interface SharedCount {
  add(delta: number): number;
}

export class ConnectionTable {
  readonly conns = new Set<Connection>();
  /** Stopping: connections close as soon as nothing runs on them. */
  draining = false;
  readonly #limits: ConnLimits;
  /** The body reads swept with the connections (an app's `Core.bodies`). */
  readonly #bodies: BodyDeadlines | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #waiters: (() => void)[] = [];

  readonly #shared: SharedCount | undefined;

  /** With `shared`, the cap counts every connection that count holds. */
  constructor(
    limits: ConnLimits,
    bodies?: BodyDeadlines,
    shared?: SharedCount,
  ) {
    this.#limits = limits;
    this.#bodies = bodies;
    this.#shared = shared;
  }

  /** True when no connection may be accepted now (`cap` open already). */
  full(cap: number): boolean {
    return (this.#shared ? this.#shared.add(0) : this.conns.size) >= cap;
  }

  /** Sweep period: a quarter of the shortest timeout, 100 ms to 1 s. */
  get period(): number {
    const { headerTimeoutMs, idleTimeoutMs, bodyTimeoutMs } = this.#limits;
    const shortest = Math.min(headerTimeoutMs, idleTimeoutMs, bodyTimeoutMs);
    return Math.max(100, Math.min(1000, Math.floor(shortest / 4)));
  }

  /** Starts the sweeper (it never keeps the process alive by itself). */
  start(): void {
    if (this.#timer !== undefined) return;
    const period = this.draining ? 100 : this.period;
    const timer = setInterval(() => this.sweep(), period);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  /** Stops the sweeper. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Registers a connection. */
  add(c: Connection): void {
    if (this.conns.has(c)) return;
    this.conns.add(c);
    this.#shared?.add(1);
  }

  /** Forgets a closed connection and wakes one waiting for a free slot. */
  remove(c: Connection): void {
    if (this.conns.delete(c)) this.#shared?.add(-1);
    this.#waiters.shift()?.();
  }

  /** Resolves when a connection goes away or after `ms`. */
  slot(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      const waiters = this.#waiters;
      function done() {
        clearTimeout(t);
        const i = waiters.indexOf(done);
        if (i >= 0) waiters.splice(i, 1);
        resolve();
      }
      waiters.push(done);
    });
  }

  /** One pass: expire body reads, close expired connections. */
  sweep(): void {
    const now = performance.now();
    this.#bodies?.sweep(now);
    const { headerTimeoutMs, idleTimeoutMs } = this.#limits;
    const draining = this.draining;
    for (const c of this.conns) {
      const wait = c.requests === 0
        ? (draining ? 0 : headerTimeoutMs)
        : (draining || c.closeSoon ? GRACE_MS : idleTimeoutMs);
      if (c.idleFor(now, wait) || c.stalledFor(now, idleTimeoutMs)) {
        c.closer.close();
      }
    }
  }

  /**
   * Closes one idle connection to make room (the cap is reached or the
   * process ran out of descriptors): one that never sent a request first,
   * then the one idle the longest. None younger than `GRACE_MS`: a client
   * just accepted is still sending its request. False when none qualifies.
   */
  evict(): boolean {
    const now = performance.now();
    let victim: Connection | undefined;
    for (const c of this.conns) {
      if (!c.idleFor(now, GRACE_MS)) continue;
      if (
        !victim ||
        (c.requests === 0 && victim.requests > 0) ||
        (c.requests === 0) === (victim.requests === 0) &&
          (c.requests === 0 ? c.opened < victim.opened : c.last < victim.last)
      ) victim = c;
    }
    victim?.closer.close();
    return victim !== undefined;
  }

  /** Drains: idle connections close now, the others after their response. */
  drain(): void {
    this.draining = true;
    this.stop();
    this.start(); // faster sweeps while draining
    this.sweep();
  }

  /** Closes every connection now. */
  closeAll(): void {
    for (const c of this.conns) c.closer.close();
  }
}
