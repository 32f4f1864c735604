/**
 * Scheduled jobs of extension scripts (`app.cron(name, schedule, fn)`).
 *
 * Schedules are cron expressions of 5 fields (minute hour day month
 * weekday), or 6 with seconds first, read in UTC so that every instance
 * computes the same tick times. Each tick is claimed in the system table
 * `mb_cron_runs` (primary key: job and tick time) before it runs: with
 * several instances on one database, or the isolates of `serve --workers
 * N` (each schedules every job), the one whose insert takes runs it, the
 * others skip it. A run of a job still in progress on this instance
 * when its next tick comes makes that tick skipped; a throw is logged.
 *
 * @module
 */

import {
  type Cron,
  parseSchedule as parse,
  scheduleProblem,
} from "../schedule.ts";
import type { Storage } from "../db/storage.ts";
import type { Logger } from "../logs/logger.ts";

export { scheduleProblem };

/** One registered job. */
export interface CronJob {
  name: string;
  schedule: string;
  fn: () => unknown;
  /** The script that registered it. */
  source: string;
}

/** Claims are kept this long (ms): longer than any lag between instances. */
const KEEP_CLAIMS = 60 * 60_000;
/** Old claims are deleted at most this often (ms) by each runner. */
const PRUNE_EVERY = 5 * 60_000;
/** The longest delay a timer takes (ms); farther ticks are re-planned. */
const MAX_DELAY = 2 ** 31 - 1;

/** The jobs of one `start()`: stopping them clears their timers. */
interface Generation {
  stopped: boolean;
  timers: Set<ReturnType<typeof setTimeout>>;
}

/** Runs the jobs of the current extension set. */
export class CronRunner {
  readonly #storage: Storage;
  readonly #log: Logger;
  readonly #now: () => number;
  /** This runner's id, recorded with the ticks it claims. */
  readonly #instance = crypto.randomUUID();
  #current: Generation | undefined;
  /** Jobs (by name) with a run in progress on this instance. */
  readonly #busy = new Set<string>();
  /** Runs in progress (`stop()` waits for them). */
  readonly #runs = new Set<Promise<void>>();
  #pruned = 0;

  /**
   * Jobs run with `storage` (one tick per instance group) and log to `log`;
   * `now` is the clock that timers are planned with (default `Date.now`).
   */
  constructor(storage: Storage, log: Logger, now: () => number = Date.now) {
    this.#storage = storage;
    this.#log = log;
    this.#now = now;
  }

  /** Starts `jobs` (the previous ones stop first; their runs in progress finish). */
  start(jobs: readonly CronJob[]): void {
    this.#halt();
    const gen: Generation = { stopped: false, timers: new Set() };
    this.#current = gen;
    for (const job of jobs) {
      const cron = parse(job.schedule);
      if (typeof cron === "string") {
        // Registration refuses these; a job built elsewhere is reported, not run.
        this.#log.error(`Cannot schedule cron job ${job.name}: ${cron}`, {
          script: job.source,
          job: job.name,
        });
        continue;
      }
      this.#plan(gen, job, cron, this.#now());
    }
  }

  /** Stops every job; resolves when no run is in progress. */
  async stop(): Promise<void> {
    this.#halt();
    while (this.#runs.size > 0) await Promise.allSettled([...this.#runs]);
  }

  /** Clears the timers of the current jobs; none fires after this. */
  #halt(): void {
    const gen = this.#current;
    if (!gen) return;
    gen.stopped = true;
    for (const t of gen.timers) clearTimeout(t);
    gen.timers.clear();
    this.#current = undefined;
  }

  /** Sets the timer of the job's first tick after `from`. */
  #plan(gen: Generation, job: CronJob, cron: Cron, from: number): void {
    if (gen.stopped) return;
    const next = cron.nextRun(new Date(from));
    if (!next) return;
    const tick = next.getTime();
    const delay = tick - this.#now();
    const timer = setTimeout(() => {
      gen.timers.delete(timer);
      if (gen.stopped) return;
      if (delay > MAX_DELAY) {
        // Too far for one timer: wait again from here.
        this.#plan(gen, job, cron, from);
        return;
      }
      // The next tick is planned now: a long run does not delay it.
      this.#plan(gen, job, cron, Math.max(tick, this.#now()));
      this.#fire(gen, job, tick);
    }, Math.max(0, Math.min(delay, MAX_DELAY)));
    Deno.unrefTimer(timer);
    gen.timers.add(timer);
  }

  /** Runs one tick unless a run is in progress here or another instance took it. */
  #fire(gen: Generation, job: CronJob, tick: number): void {
    const at = new Date(tick).toISOString();
    if (this.#busy.has(job.name)) {
      this.#log.info(
        `cron job ${job.name} skipped: its previous run is in progress`,
        { script: job.source, job: job.name, tick: at },
      );
      return;
    }
    this.#busy.add(job.name);
    const run = (async () => {
      const where = { script: job.source, job: job.name, tick: at };
      try {
        if (!await this.#claim(job, tick)) return;
      } catch (err) {
        this.#log.error(
          `Cannot run cron job ${job.name}: the database refused the claim: ${
            messageOf(err)
          }`,
          where,
        );
        return;
      }
      try {
        if (!gen.stopped) await job.fn();
      } catch (err) {
        this.#log.error(`cron job ${job.name} failed`, {
          ...where,
          error: messageOf(err),
        });
      }
      await this.#prune().catch((err) =>
        this.#log.warn(`Cannot prune cron claims: ${messageOf(err)}`)
      );
    })().finally(() => {
      this.#busy.delete(job.name);
      this.#runs.delete(run);
    });
    this.#runs.add(run);
  }

  /** True when this instance took the tick (its row went in). */
  async #claim(job: CronJob, tick: number): Promise<boolean> {
    const took = await this.#storage.run(
      `INSERT INTO "mb_cron_runs" ("job", "tick", "instance", "created") VALUES (?, ?, ?, ?) ON CONFLICT ("job", "tick") DO NOTHING`,
      [job.name, tick, this.#instance, this.#now()],
    );
    return took > 0;
  }

  /** Deletes old claims (at most every few minutes). */
  async #prune(): Promise<void> {
    const now = this.#now();
    if (now - this.#pruned < PRUNE_EVERY) return;
    this.#pruned = now;
    await this.#storage.run(`DELETE FROM "mb_cron_runs" WHERE "tick" < ?`, [
      now - KEEP_CLAIMS,
    ]);
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
