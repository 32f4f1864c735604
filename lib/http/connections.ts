/**
 * The open connections of a server and the one sweeper that closes them:
 * a connection that sends no complete request within the header timeout,
 * or none after its last response within the idle timeout, is asked to
 * close gracefully (hyper closes it at once when nothing is in progress, or
 * after the response it is still sending); one that ignored that request
 * by the next sweep (stuck on a body nobody reads, or on a client that does
 * not read its response) is closed hard. Per request the hot path only
 * updates counters; timing is the sweeper's job.
 *
 * @module
 */

import { sweepBodies } from "./deadlines.ts";

/** What a served connection looks like (`Deno.HttpServer` per connection). */
export interface ConnServer {
  finished: Promise<void>;
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

/** Request info as the HTTP engine gives it (remoteAddr throws once done). */
type Info = { readonly remoteAddr: unknown };

/** One accepted connection. */
export class Connection {
  /** Requests whose handler is running. */
  inFlight = 0;
  /** Requests seen (0: the first request head has not arrived yet). */
  requests = 0;
  /** When the connection was accepted (performance.now()). */
  readonly opened: number;
  /** When the last handler returned (the sweeper's coarse clock). */
  last: number;
  /** When a graceful close was asked (0: not yet). */
  closing = 0;
  /** The last request's info: tells whether its response is still sent. */
  info: Info | undefined;
  /** Aborting it closes the connection at once. */
  readonly abort = new AbortController();
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

  /** Asks for a graceful close (idle: at once; busy: after the response). */
  close(now: number): void {
    if (this.closing) return;
    this.closing = now;
    this.http?.shutdown().catch(() => {});
  }

  /** Closes the connection now. */
  kill(): void {
    this.abort.abort();
  }
}

/** The connections of one server, swept by one timer. */
export class ConnectionTable {
  readonly conns = new Set<Connection>();
  /** Coarse clock (performance.now() at the last sweep). */
  clock = performance.now();
  readonly #limits: ConnLimits;
  #timer: ReturnType<typeof setInterval> | undefined;
  #waiters: (() => void)[] = [];

  constructor(limits: ConnLimits) {
    this.#limits = limits;
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
    const timer = setInterval(() => this.sweep(), this.period);
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
    this.conns.add(c);
  }

  /** Forgets a closed connection and wakes one waiting for a free slot. */
  remove(c: Connection): void {
    this.conns.delete(c);
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

  /** One pass: expire body reads, close idle connections, kill stuck ones. */
  sweep(): void {
    const now = this.clock = performance.now();
    sweepBodies(now);
    const { headerTimeoutMs, idleTimeoutMs } = this.#limits;
    for (const c of this.conns) {
      if (c.inFlight > 0) continue;
      if (c.closing) {
        if (now > c.closing && !c.sending()) c.kill();
        continue;
      }
      if (
        c.requests === 0
          ? now - c.opened >= headerTimeoutMs
          : now - c.last >= idleTimeoutMs
      ) c.close(now);
    }
  }

  /**
   * Closes one idle connection to make room (the cap is reached or the
   * process ran out of descriptors): one that never sent a request first,
   * then the one idle the longest. False when every connection is busy.
   */
  evict(): boolean {
    let victim: Connection | undefined;
    for (const c of this.conns) {
      if (c.inFlight > 0 || c.abort.signal.aborted || c.sending()) continue;
      if (
        !victim ||
        (c.requests === 0 && victim.requests > 0) ||
        (c.requests === 0) === (victim.requests === 0) &&
          (c.requests === 0 ? c.opened < victim.opened : c.last < victim.last)
      ) victim = c;
    }
    victim?.kill();
    return victim !== undefined;
  }

  /** Asks every connection to close gracefully. */
  closeAll(): void {
    const now = performance.now();
    for (const c of this.conns) c.close(now);
  }

  /** Closes every connection now. */
  killAll(): void {
    for (const c of this.conns) c.kill();
  }
}
