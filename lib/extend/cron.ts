/**
 * Scheduled jobs of extension scripts (`app.cron(name, schedule, fn)`).
 * (Placeholder: parsing and running schedules is being written.)
 *
 * @module
 */

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
