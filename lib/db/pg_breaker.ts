/**
 * A circuit breaker for PostgreSQL: tells "the database cannot be reached"
 * from "a query is still running", so requests fail fast (503) during an
 * outage while a legitimately slow query is never cut short.
 *
 * A suspicion — a connection-class error, or a connection with work that has
 * not made progress for `stallMs` — starts a probe: a trivial query on a
 * connection of its own, with a deadline (`probeMs`). Only a failed probe
 * (refused, timed out, connection lost) opens the breaker; then `onOpen`
 * drops the pool's connections (settling what hung on them) and every
 * statement fails at once, while the probe repeats every `retryMs` in the
 * background. The first probe that succeeds closes it again.
 *
 * @module
 */

/** Tuning of a breaker (milliseconds). */
export interface BreakerTimes {
  /** A connection with unsettled work and no progress this long is suspect. */
  stallMs: number;
  /** A probe slower than this counts as failed. */
  probeMs: number;
  /** While open: the pause between probes. */
  retryMs: number;
  /** How often stalls are looked for. */
  tickMs: number;
}

/** The defaults: every request answered within about two seconds. */
export const BREAKER_TIMES: BreakerTimes = {
  stallMs: 750,
  probeMs: 1000,
  retryMs: 1000,
  tickMs: 250,
};

/** What the breaker watches and acts on. */
export interface BreakerHooks {
  /** Resolves true when the database answered, false when unreachable. */
  probe(deadlineMs: number): Promise<boolean>;
  /** True when a connection has had unsettled work without progress for `stallMs`. */
  stalled(now: number, stallMs: number): boolean;
  /** Called once each time the breaker opens. */
  onOpen(): void;
}

/** The breaker's state machine (closed → open → closed). */
export class Breaker {
  #open = false;
  #probing = false;
  #lastProbe = 0;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #tick: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  readonly #hooks: BreakerHooks;
  readonly #times: BreakerTimes;

  /** Creates a closed breaker that looks for stalls every `tickMs`. */
  constructor(hooks: BreakerHooks, times: BreakerTimes = BREAKER_TIMES) {
    this.#hooks = hooks;
    this.#times = times;
    this.#tick = setInterval(() => {
      const now = Date.now();
      // A slow query keeps its connection stalled: probe at most once a second.
      if (
        !this.#open && now - this.#lastProbe >= 1000 &&
        hooks.stalled(now, times.stallMs)
      ) {
        this.suspect();
      }
    }, times.tickMs);
    Deno.unrefTimer(this.#tick);
  }

  /** True while the database is known to be unreachable. */
  get open(): boolean {
    return this.#open;
  }

  /** Something looked like a lost database: probe now (once at a time). */
  suspect(): void {
    if (this.#probing || this.#closed) return;
    this.#probing = true;
    this.#lastProbe = Date.now();
    this.#hooks.probe(this.#times.probeMs).then(
      (up) => this.#settle(up),
      () => this.#settle(false),
    );
  }

  #settle(up: boolean): void {
    this.#probing = false;
    if (this.#closed) return;
    if (up) {
      this.#open = false;
      return;
    }
    if (!this.#open) {
      this.#open = true;
      this.#hooks.onOpen();
    }
    this.#retry = setTimeout(() => this.suspect(), this.#times.retryMs);
    Deno.unrefTimer(this.#retry);
  }

  /** Stops the timers (the storage is closing). */
  stop(): void {
    this.#closed = true;
    clearInterval(this.#tick);
    clearTimeout(this.#retry);
  }
}
