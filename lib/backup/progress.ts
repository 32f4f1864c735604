/**
 * Progress of long work (a backup, a restore, a move) for people: on a
 * terminal one line redrawn in place (rows, bytes, rate, time left when the
 * total is known); otherwise a plain line at most every few seconds, which
 * reads well in a log file or CI output.
 *
 * @module
 */

import type { Progress } from "./create.ts";

/** Where progress goes. */
export interface ProgressSink {
  /** True on a terminal (lines are redrawn in place). */
  tty: boolean;
  write(text: string): void;
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/**
 * A progress callback printing to `sink`; `done()` ends the line. `total`
 * (rows + bytes) gives the time left.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { progressPrinter } from "moonbase/lib/backup/progress.ts";
 * const out: string[] = [];
 * let now = 0;
 * const p = progressPrinter("backup", { tty: false, write: (t) => out.push(t) }, undefined, () => now);
 * p.update({ stage: "records", rows: 10, bytes: 0 });
 * now = 6000;
 * p.update({ stage: "files", rows: 10, bytes: 2097152 });
 * p.done();
 * assert.match(out.at(-1)!, /backup: done: 10 records, 2.0 MiB of files/);
 * ```
 */
export function progressPrinter(
  label: string,
  sink: ProgressSink,
  total?: { rows: number; bytes: number },
  now: () => number = Date.now,
): { update(p: Progress): void; done(): void } {
  const start = now();
  let last = 0, latest: Progress = { stage: "records", rows: 0, bytes: 0 };
  const line = (p: Progress) => {
    const secs = Math.max(0.001, (now() - start) / 1000);
    let text = `${label}: ${p.rows} records, ${mib(p.bytes)} of files, ${
      mib(p.bytes / secs)
    }/s`;
    if (total && total.rows + total.bytes > 0) {
      const done = (p.rows + p.bytes) / (total.rows + total.bytes);
      if (done > 0) {
        text += `, ${Math.round(done * 100)}%, ~${
          Math.ceil(secs / done - secs)
        } s left`;
      }
    }
    return text;
  };
  return {
    update(p) {
      latest = p;
      const t = now();
      if (sink.tty) {
        if (t - last < 100) return;
        last = t;
        sink.write(`\r\x1b[2K${line(p)}`);
      } else if (t - last >= 5000) {
        last = t;
        sink.write(`${line(p)}\n`);
      }
    },
    done() {
      const text = `${label}: done: ${latest.rows} records, ${
        mib(latest.bytes)
      } of files in ${((now() - start) / 1000).toFixed(1)} s`;
      sink.write(sink.tty ? `\r\x1b[2K${text}\n` : `${text}\n`);
    },
  };
}
