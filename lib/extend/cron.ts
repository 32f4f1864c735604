/**
 * Scheduled jobs of extension scripts (`app.cron(name, schedule, fn)`).
 * (Placeholder: parsing and running schedules is being written.)
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import type { Logger } from "../logs/logger.ts";

/** One registered job. */
export interface CronJob {
  name: string;
  schedule: string;
  fn: () => unknown;
  /** The script that registered it. */
  source: string;
}

/** Why a schedule is not valid, or undefined when it is. */
export function scheduleProblem(schedule: string): string | undefined {
  const n = typeof schedule === "string"
    ? schedule.trim().split(/\s+/).length
    : 0;
  return n === 5 || n === 6
    ? undefined
    : "use 5 fields, or 6 with seconds first";
}

/** Runs the jobs of the current extension set. (Placeholder: runs nothing yet.) */
export class CronRunner {
  /** Jobs run with `storage` (one tick per instance group) and log to `log`. */
  constructor(_storage: Storage, _log: Logger) {}
  /** Starts `jobs` (the previous ones stop first). */
  start(_jobs: readonly CronJob[]): void {}
  /** Stops every job; resolves when no run is in progress. */
  stop(): Promise<void> {
    return Promise.resolve();
  }
}
