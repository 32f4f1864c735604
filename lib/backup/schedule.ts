/**
 * Scheduled backups: the settings' `backups: {cron, keep}` (`cron` "" is
 * off). Each instance looks every 30 seconds whether a tick of the schedule
 * has come; the tick is claimed in `mb_cron_runs` (job `mb:backups`) so that
 * with several instances on one database it runs once. A scheduled backup
 * is named `mb_auto_<UTC time>.tar.gz`; after one succeeds, the oldest
 * `mb_auto_*` beyond `keep` are deleted — only those, and in S3 only those
 * this database made: a backup made by hand or uploaded, or an object put
 * there by someone else, is never deleted by the schedule. A failure is logged and
 * mailed to every admin when mail is set up.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import { parseSchedule } from "../schedule.ts";
import type { Settings } from "../settings/types.ts";
import type { Backups } from "./service.ts";

/** The claim's job name in `mb_cron_runs`. */
export const BACKUP_JOB = "mb:backups";
/** Names of scheduled backups (the only ones `keep` deletes). */
export const AUTO_NAME = /^mb_auto_\d{8}T\d{6}Z\.tar\.gz$/;
const LOOK_EVERY_MS = 30_000;

/** What the schedule needs. */
export interface BackupScheduleOptions {
  storage: Storage;
  backups: Backups;
  settings: () => Promise<Settings>;
  now: () => number;
  log: {
    info(message: string, data?: Record<string, unknown>): void;
    error(message: string, data?: Record<string, unknown>): void;
  };
  /** Mails the admins that a scheduled backup failed (when mail is set up). */
  alert?: (error: string) => Promise<void>;
}

function autoName(tick: number): string {
  const t = new Date(tick).toISOString().replace(/[-:]/g, "").replace(
    /\.\d+Z$/,
    "Z",
  );
  return `mb_auto_${t}`;
}

/** Scheduled backups of one instance. */
export class BackupSchedule {
  readonly #o: BackupScheduleOptions;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #last: number;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(options: BackupScheduleOptions) {
    this.#o = options;
    this.#last = options.now();
  }

  /** Starts looking for ticks. */
  start(): void {
    this.#arm();
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.look().finally(() => {
        this.#running = undefined;
        this.#arm();
      });
    }, LOOK_EVERY_MS);
  }

  /**
   * Runs the backup when a tick came since the last look (and this instance
   * claims it); returns the tick run, if any. Public for tests.
   */
  async look(): Promise<number | undefined> {
    const now = this.#o.now();
    const since = this.#last;
    this.#last = now;
    let settings: Settings;
    try {
      settings = await this.#o.settings();
    } catch {
      return undefined; // the database is down: the next look tries again
    }
    const { cron, keep } = settings.backups;
    if (!cron) return undefined;
    const parsed = parseSchedule(cron);
    if (typeof parsed === "string") return undefined;
    const due = parsed.nextRun(new Date(since));
    if (!due || due.getTime() > now) return undefined;
    const tick = due.getTime();
    try {
      const claimed = await this.#o.storage.run(
        `INSERT INTO "mb_cron_runs" ("job", "tick", "instance", "created") VALUES (?, ?, ?, ?) ON CONFLICT ("job", "tick") DO NOTHING`,
        [BACKUP_JOB, tick, "backups", now],
      );
      if (claimed === 0) return undefined; // another instance runs it
      await this.#run(tick, keep);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.#o.log.error("scheduled backup failed", { error });
      await this.#o.alert?.(error).catch((e) =>
        this.#o.log.error("cannot mail the admins about a failed backup", {
          error: e instanceof Error ? e.message : String(e),
        })
      );
    }
    return tick;
  }

  async #run(tick: number, keep: number): Promise<void> {
    const made = await this.#o.backups.create(autoName(tick));
    this.#o.log.info("scheduled backup made", {
      name: made.name,
      size: made.size,
    });
    const autos = (await this.#o.backups.list()).filter((b) =>
      AUTO_NAME.test(b.name)
    ).sort((a, b) => b.name.localeCompare(a.name));
    let kept = 0;
    for (const auto of autos) {
      // Only scheduled backups (mb_auto_*) this database made: in S3, an
      // object of that name put by someone else (or by another project
      // sharing the prefix) is neither counted nor deleted.
      if (!await this.#o.backups.ours(auto.name)) continue;
      if (++kept <= keep) continue;
      await this.#o.backups.remove(auto.name);
      this.#o.log.info("old scheduled backup deleted", { name: auto.name });
    }
  }

  /** Stops the schedule; resolves when a backup in progress is done. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
