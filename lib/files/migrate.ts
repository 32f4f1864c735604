/**
 * `moonbase files migrate --to <store>`: copies every file the database's
 * ledger records (stored files and their thumbnails; not a temporary file
 * of a write under way) from the store in use to another (disk to S3, S3 to
 * disk, one bucket to another), so the server can start on the new one.
 *
 * - Each copy is verified: its size, and a SHA-256 of the copy read back
 *   against the one of the bytes read from the source. A copy that does
 *   not match is removed again and counted as failed.
 * - Resumable: a journal in the data directory lists the verified copies;
 *   a run again skips those still there (a copy found without a journal
 *   line, e.g. cut off by a crash, is checked, and replaced if it differs).
 * - The source is only read: nothing there is ever removed.
 * - A file the ledger records that the source no longer has (an upload a
 *   crash cut off) is skipped and counted.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import type { FileBackend } from "./backend.ts";
import type { FileLedger } from "./ledger.ts";
import { originalOf, STORED_NAME } from "./names.ts";

/** What a migration did. */
export interface MigrateSummary {
  /** Files the ledger records. */
  total: number;
  copied: number;
  /** Verified copies already there (an earlier run's). */
  skipped: number;
  /** Recorded but missing in the source. */
  missing: number;
  failed: number;
  /** Bytes copied now. */
  bytes: number;
}

/** One step, for the progress shown. */
export interface MigrateStep {
  entityId: string;
  name: string;
  outcome: "copied" | "skipped" | "missing" | "failed";
  size: number;
  /** Why it failed. */
  error?: string;
  /** Steps done so far, and of how many. */
  done: number;
  total: number;
}

/** The journal of verified copies to `to` (a file in the data directory). */
export function journalPath(dataDir: string, to: FileBackend): string {
  const id = createHash("sha256").update(to.name).digest("hex").slice(0, 16);
  return join(dataDir, `files-migrate-${id}.journal`);
}

async function readJournal(path: string): Promise<Map<string, number>> {
  const done = new Map<string, number>();
  let text = "";
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  for (const line of text.split("\n")) {
    const [key, size] = line.split("\t");
    if (key && /^\d+$/.test(size ?? "")) done.set(key, Number(size));
  }
  return done;
}

/** SHA-256 and size of a stream's bytes, passing them on to `sink` if given. */
async function digest(
  stream: ReadableStream<Uint8Array>,
): Promise<{ sha: string; size: number }> {
  const h = createHash("sha256");
  let size = 0;
  for await (const c of stream) {
    h.update(c);
    size += c.length;
  }
  return { sha: h.digest("hex"), size };
}

/** Copies a file, hashing what it read; returns that hash. */
async function copy(
  from: FileBackend,
  to: FileBackend,
  entityId: string,
  name: string,
  modified: Date,
): Promise<{ sha: string; size: number } | undefined> {
  const source = await from.read(entityId, name);
  if (!source) return undefined;
  const h = createHash("sha256");
  let size = 0;
  async function* hashed(): AsyncGenerator<Uint8Array> {
    for await (const c of source!) {
      h.update(c);
      size += c.length;
      yield c;
    }
  }
  await to.write(entityId, name, hashed(), modified);
  return { sha: h.digest("hex"), size };
}

/** True when the copy in `to` has the source's bytes (size and SHA-256). */
async function same(
  to: FileBackend,
  entityId: string,
  name: string,
  expected: { sha: string; size: number },
): Promise<boolean> {
  const info = await to.stat(entityId, name);
  if (!info || info.size !== expected.size) return false;
  const body = await to.read(entityId, name);
  if (!body) return false;
  const got = await digest(body);
  return got.size === expected.size && got.sha === expected.sha;
}

/**
 * Copies every recorded file from `from` to `to`, verified; `step` hears of
 * each file. Throws only when the ledger cannot be read or a store cannot be
 * reached at all; a file that fails is counted and the others go on.
 */
export async function migrateFiles(
  ledger: FileLedger,
  from: FileBackend,
  to: FileBackend,
  journal: string,
  step: (s: MigrateStep) => void,
): Promise<MigrateSummary> {
  const done = await readJournal(journal);
  const files: [string, string][] = [];
  for (const entityId of await ledger.entities(Number.MAX_SAFE_INTEGER)) {
    for (const name of await ledger.of(entityId)) {
      // Stored files and thumbnails; a temporary name is a write under way
      // (its writer forgets it), and a copy of it would be no one's.
      if (STORED_NAME.test(name) || originalOf(name) !== undefined) {
        files.push([entityId, name]);
      }
    }
  }
  const sum: MigrateSummary = {
    total: files.length,
    copied: 0,
    skipped: 0,
    missing: 0,
    failed: 0,
    bytes: 0,
  };
  const log = await Deno.open(journal, {
    append: true,
    create: true,
    mode: 0o600,
  });
  const enc = new TextEncoder();
  try {
    let n = 0;
    for (const [entityId, name] of files) {
      n++;
      const key = `${entityId}/${name}`;
      const report = (
        outcome: MigrateStep["outcome"],
        size: number,
        error?: string,
      ) => {
        sum[outcome]++;
        step({
          entityId,
          name,
          outcome,
          size,
          done: n,
          total: files.length,
          ...(error ? { error } : {}),
        });
      };
      try {
        const known = done.get(key);
        if (known !== undefined) {
          const there = await to.stat(entityId, name);
          if (there?.size === known) {
            report("skipped", known);
            continue;
          }
        }
        const info = await from.stat(entityId, name);
        if (!info) {
          report("missing", 0);
          continue;
        }
        if (await to.stat(entityId, name)) {
          // A copy without a journal line (a run cut off): keep it if it is
          // the same, else write it again.
          const source = await from.read(entityId, name);
          const expected = source ? await digest(source) : undefined;
          if (expected && await same(to, entityId, name, expected)) {
            await log.write(enc.encode(`${key}\t${expected.size}\n`));
            report("skipped", expected.size);
            continue;
          }
          if (!await to.remove(entityId, name)) {
            throw new Error("cannot replace a differing copy in the target");
          }
        }
        const copied = await copy(from, to, entityId, name, info.modified);
        if (!copied) {
          report("missing", 0);
          continue;
        }
        if (!await same(to, entityId, name, copied)) {
          await to.remove(entityId, name);
          report("failed", copied.size, "the copy read back differs");
          continue;
        }
        await log.write(enc.encode(`${key}\t${copied.size}\n`));
        sum.bytes += copied.size;
        report("copied", copied.size);
      } catch (err) {
        report(
          "failed",
          0,
          err instanceof Error ? err.message.split("\n")[0] : String(err),
        );
      }
    }
  } finally {
    log.close();
  }
  return sum;
}

/** `1.5 MiB`. */
export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n, u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/**
 * What a step shows: on a terminal, one bar redrawn in place; otherwise a
 * plain line per file (and every failure on a line of its own either way).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stepText } from "moonbase/lib/files/migrate.ts";
 * const s = { entityId: "e1", name: "a_0123456789.png", outcome: "copied" as const, size: 2048, done: 1, total: 4 };
 * assert.equal(stepText(s, false), "copied e1/a_0123456789.png (2.0 KiB) [1/4]\n");
 * assert.match(stepText(s, true), /^\r\[#{5}\.{15}\] 1\/4 files/);
 * ```
 */
export function stepText(s: MigrateStep, terminal: boolean): string {
  const line = `${s.outcome} ${s.entityId}/${s.name}${
    s.outcome === "failed"
      ? `: ${s.error ?? "unknown error"}`
      : s.outcome === "missing"
      ? " (not in the source: skipped)"
      : ` (${bytesText(s.size)})`
  }`;
  if (!terminal) return `${line} [${s.done}/${s.total}]\n`;
  const width = 20;
  const full = s.total === 0 ? width : Math.round(width * s.done / s.total);
  const bar = `\r[${"#".repeat(full)}${
    ".".repeat(width - full)
  }] ${s.done}/${s.total} files`;
  // A failure stays on the screen; the bar goes on below it.
  return s.outcome === "failed" || s.outcome === "missing"
    ? `\r\x1b[2K${line}\n${bar}`
    : `${bar}\x1b[K`;
}
