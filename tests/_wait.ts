/**
 * Waiting in tests, in one place: poll for a condition with a deadline
 * (`poll`), bound a promise by a deadline (`within`), tell whether a promise
 * settles within a window (`settlesWithin`), and a deliberate pause
 * (`pause`) for the few places where the time itself is the point (a window
 * held open, a burst, an interleaving). A deadline here only turns a hang into
 * a failure with a message: it is generous and never a claim about speed
 * (timing claims belong to `deno task bench`).
 *
 * @module
 */

/** Resolves after `ms`: only where the pause itself is what a test needs. */
export function pause(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}

/** Options of `poll`. */
export interface PollOptions {
  /** Give up after this many ms (default 10 000). */
  deadline?: number;
  /** Pause between two checks in ms (default 25). */
  every?: number;
}

/**
 * Calls `check` until it returns something other than `false`, `undefined`
 * or `null`, and returns that; throws "timed out waiting for <what>" past the
 * deadline.
 */
export async function poll<T>(
  what: string,
  check: () => T | Promise<T>,
  opts: PollOptions = {},
): Promise<Exclude<T, false | undefined | null>> {
  const deadline = opts.deadline ?? 10_000;
  const end = Date.now() + deadline;
  while (true) {
    const v = await check();
    if (v !== false && v !== undefined && v !== null) {
      return v as Exclude<T, false | undefined | null>;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what} (${deadline} ms)`);
    }
    await pause(opts.every ?? 25);
  }
}

/** `p`, or a rejection "<what>: no answer within <ms> ms" (a hang fails). */
export async function within<T>(
  what: string,
  ms: number,
  p: Promise<T>,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, no) =>
        timer = setTimeout(
          () => no(new Error(`${what}: no answer within ${ms} ms`)),
          ms,
        )
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `p` settles to, or "timeout" when it has not settled after `ms`: for
 * checks that something stays pending (or may be pending) for a while.
 */
export async function settlesWithin<T>(
  p: Promise<T>,
  ms: number,
): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<"timeout">((ok) =>
        timer = setTimeout(() => ok("timeout"), ms)
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A clock that runs with this machine's but can be moved forward: pass
 * `now` as `AppConfig.clock` (tokens, expiry) and `advance` instead of
 * waiting for a lifetime to run out.
 */
export class ShiftedClock {
  #shift = 0;
  /** Milliseconds since the epoch: the real time plus every advance. */
  readonly now = (): number => Date.now() + this.#shift;
  /** Moves the clock `ms` forward. */
  advance(ms: number): void {
    this.#shift += ms;
  }
}

type Timer = { at: number; fn: () => void; id: number };

/**
 * Fake time for code that plans with `setTimeout` and a `now()` (the cron
 * runner): `install()` replaces `setTimeout`, `clearTimeout` and
 * `Deno.unrefTimer` until `restore()`; `tick(ms)` moves time forward and runs
 * every timer that falls due, in order, letting the work each starts run on.
 * Nothing waits for real time.
 */
export class FakeTimers {
  #now: number;
  #timers = new Map<number, Timer>();
  #ids = 1;
  #saved:
    | {
      setTimeout: typeof setTimeout;
      clearTimeout: typeof clearTimeout;
      unrefTimer: typeof Deno.unrefTimer;
    }
    | undefined;

  /** Starts at `start` ms since the epoch (default 2030-01-01T00:00:00.250Z). */
  constructor(start = Date.UTC(2030, 0, 1) + 250) {
    this.#now = start;
  }

  /** The fake time in ms since the epoch. */
  readonly now = (): number => this.#now;

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Replaces the timer functions (until `restore()`). */
  install(): this {
    this.#saved = {
      setTimeout: globalThis.setTimeout,
      clearTimeout: globalThis.clearTimeout,
      unrefTimer: Deno.unrefTimer,
    };
    const fake = (fn: () => void, ms = 0): number => {
      const id = this.#ids++;
      this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn, id });
      return id;
    };
    globalThis.setTimeout = fake as unknown as typeof setTimeout;
    globalThis.clearTimeout = ((id?: number) => {
      if (id !== undefined) this.#timers.delete(id);
    }) as typeof clearTimeout;
    Deno.unrefTimer = () => {};
    return this;
  }

  /** Puts the real timer functions back. */
  restore(): void {
    if (!this.#saved) return;
    globalThis.setTimeout = this.#saved.setTimeout;
    globalThis.clearTimeout = this.#saved.clearTimeout;
    Deno.unrefTimer = this.#saved.unrefTimer;
    this.#saved = undefined;
  }

  /** Moves time `ms` forward, firing the timers due on the way. */
  async tick(ms: number): Promise<void> {
    const end = this.#now + ms;
    while (true) {
      await this.#settle();
      let due: Timer | undefined;
      for (const t of this.#timers.values()) {
        if (t.at <= end && (!due || t.at < due.at)) due = t;
      }
      if (!due) break;
      this.#timers.delete(due.id);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
    }
    this.#now = end;
    await this.#settle();
  }

  /** Lets the promises that timers started run on (real macrotasks). */
  async #settle(): Promise<void> {
    const real = this.#saved?.setTimeout ?? globalThis.setTimeout;
    for (let i = 0; i < 5; i++) await new Promise((ok) => real(ok, 0));
  }
}
