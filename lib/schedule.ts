/**
 * Cron schedules: 5 fields (minute hour day month weekday), or 6 with
 * seconds first, or a nickname (`@daily`), read in UTC so that every
 * instance computes the same tick times. Used by extension scripts' jobs
 * (lib/extend/cron.ts) and scheduled backups (lib/backup/schedule.ts).
 *
 * @module
 */

// Full specifier, not the import map: embedders import mod.ts without it.
// deno-lint-ignore no-import-prefix
import { Cron } from "npm:croner@11.0.1";

export type { Cron };

/** The parsed schedule, or the reason it is refused. */
export function parseSchedule(schedule: string): Cron | string {
  if (typeof schedule !== "string") return "not a string";
  const text = schedule.trim();
  const fields = text.split(/\s+/).length;
  if (!text.startsWith("@") && fields !== 5 && fields !== 6) {
    return `has ${
      text ? fields : 0
    } fields; use 5 (minute hour day month weekday), or 6 with seconds first`;
  }
  let cron: Cron;
  try {
    cron = new Cron(text, {
      paused: true,
      timezone: "UTC",
      mode: "5-or-6-parts",
    });
  } catch (err) {
    if (text.startsWith("@")) {
      return "unknown nickname; use @yearly, @monthly, @weekly, @daily or @hourly";
    }
    return messageOf(err).replace(/^CronPattern:\s*/, "");
  }
  if (!cron.nextRun()) return "never matches a date";
  return cron;
}

/**
 * Why a schedule is not valid, or undefined when it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scheduleProblem } from "moonbase/lib/schedule.ts";
 * assert.equal(scheduleProblem("*\/5 * * * *"), undefined);
 * assert.equal(scheduleProblem("0 0 3 * * *"), undefined); // seconds first
 * assert.match(scheduleProblem("* * *")!, /has 3 fields/);
 * assert.match(scheduleProblem("61 * * * *")!, /minute/);
 * assert.equal(scheduleProblem("0 0 30 2 *"), "never matches a date");
 * assert.equal(scheduleProblem("@daily"), undefined);
 * ```
 */
export function scheduleProblem(schedule: string): string | undefined {
  const parsed = parseSchedule(schedule);
  return typeof parsed === "string" ? parsed : undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
