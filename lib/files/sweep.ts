/**
 * The start-up sweep of a server (never of a CLI command): removes the
 * files this database recorded in its ledger that no record references any
 * more (an upload a crash cut off before its record was written, a file of
 * a record or entity whose removal a crash interrupted). A file the ledger
 * does not record is never removed, nor a directory because its entity is
 * unknown: it may be another database's. A thumbnail goes with its
 * original.
 *
 * Files written before the ledger existed are adopted into it once, at the
 * first start that sweeps: those a record of this database references.
 *
 * @module
 */

import type { Storage } from "../db/storage.ts";
import type { Entity } from "../records/entity.ts";
import { fileNames } from "../records/file_values.ts";
import type { Registry } from "../records/registry.ts";
import { originalOf } from "./names.ts";
import type { FileStore } from "./store.ts";

/** The `mb_meta` key set once the files on disk have been adopted. */
const ADOPTED = "files_adopted";

/**
 * How old a recorded file must be before a start-up sweep may remove it:
 * another server on the same database and data directory (several
 * processes on one SQLite file, several instances on one PostgreSQL, or a
 * second start by mistake) may still be receiving it. An upload's body
 * takes at most `bodyDeadline` seconds, then its record is written: the
 * grace is that plus five minutes, and at least fifteen.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sweepGraceMs } from "moonbase/lib/files/sweep.ts";
 * assert.equal(sweepGraceMs(600), 15 * 60_000);
 * assert.equal(sweepGraceMs(3600), 65 * 60_000);
 * ```
 */
export function sweepGraceMs(bodyDeadline: number): number {
  return Math.max(15 * 60_000, (bodyDeadline + 300) * 1000);
}

/** The stored names an entity's records reference. */
async function referencedBy(entity: Entity): Promise<Set<string>> {
  const referenced = new Set<string>();
  if (
    entity.type === "view" ||
    !entity.schema.fields.some((f) => f.type === "file" || f.type === "files")
  ) return referenced;
  let after = "";
  while (true) {
    const page = await entity.list(
      after ? `limit=500&after=${after}` : "limit=500",
    );
    for (const r of page.items) {
      for (const n of fileNames(entity.schema, r)) referenced.add(n);
    }
    if (!page.has_more || !page.cursor) break;
    after = encodeURIComponent(page.cursor);
  }
  return referenced;
}

async function stored(files: FileStore, entityId: string, name: string) {
  if (!files.isStoredName(name)) return false;
  try {
    return await files.backend.stat(entityId, name) !== undefined;
  } catch {
    return false;
  }
}

/**
 * Records in the ledger the files on disk that a record references, once
 * per database (files uploaded before the ledger existed).
 */
async function adoptOnce(
  storage: Storage,
  registry: Registry,
  files: FileStore,
): Promise<void> {
  const done = await storage.query(
    `SELECT 1 AS "one" FROM "mb_meta" WHERE "key" = ?`,
    [ADOPTED],
  );
  if (done.length > 0) return;
  for (const entity of registry.all()) {
    const names: string[] = [];
    for (const n of await referencedBy(entity)) {
      if (await stored(files, entity.id, n)) names.push(n);
    }
    await files.ledger.adopt(entity.id, names);
  }
  await storage.run(
    `INSERT INTO "mb_meta" ("key", "value") VALUES (?, ?) ON CONFLICT ("key") DO NOTHING`,
    [ADOPTED, new Date().toISOString()],
  );
}

/**
 * Removes recorded files no record references, written at least
 * `minAgeMs` ago by `now` (so that another instance's uploads in flight
 * survive); returns how many.
 *
 * @example
 * ```ts ignore
 * const removed = await sweepFiles(app.storage, app.schemas, app.files, app.now);
 * ```
 */
export async function sweepFiles(
  storage: Storage,
  registry: Registry,
  files: FileStore,
  now: () => number,
  minAgeMs = 0,
): Promise<number> {
  await adoptOnce(storage, registry, files);
  const cutoff = now() - minAgeMs;
  let n = 0;
  for (const entityId of await files.ledger.entities(cutoff)) {
    const entity = registry.get(entityId);
    // A dropped entity (its removal cut off): none of its files is referenced.
    const referenced = entity?.id === entityId
      ? await referencedBy(entity)
      : new Set<string>();
    // A thumbnail stays while its original is referenced.
    const stale = (await files.ledger.olderThan(entityId, cutoff))
      .filter((name) => !referenced.has(originalOf(name) ?? name));
    n += await files.remove(entityId, stale);
    if (entity?.id !== entityId) await files.removeEmptyDir(entityId);
  }
  return n;
}

/** How old a file left behind must be before `StraySweeps` removes it: an hour. */
export const STRAY_AGE_MS = 3_600_000;

/**
 * The sweeps of a running server (isolate 0), for files it left behind
 * while it ran: a removal after a commit or a failed upload that the store
 * (S3) did not answer keeps its ledger row (`FileStore.strayAt`). Every
 * `everyMs` it looks whether such a file is at least `ageMs` old (an hour;
 * a start-up's grace at least) and then runs `sweepFiles` for files that
 * old. Nothing happens while nothing was left behind: a sweep reads every
 * record with files.
 */
export class StraySweeps {
  readonly #sweep: (minAgeMs: number) => Promise<number>;
  readonly #files: FileStore;
  readonly #everyMs: number;
  readonly #ageMs: number;
  readonly #failed: (err: unknown) => void;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | undefined;

  /** `sweep(minAgeMs)` runs `sweepFiles` with that grace. */
  constructor(
    sweep: (minAgeMs: number) => Promise<number>,
    files: FileStore,
    options: {
      everyMs?: number;
      ageMs?: number;
      failed: (err: unknown) => void;
    },
  ) {
    this.#sweep = sweep;
    this.#files = files;
    this.#everyMs = options.everyMs ?? 600_000;
    this.#ageMs = options.ageMs ?? STRAY_AGE_MS;
    this.#failed = options.failed;
  }

  /** Starts looking (a timer that does not keep the process alive). */
  start(): void {
    this.#timer = setInterval(() => {
      this.#running ??= this.#tick().finally(() => this.#running = undefined);
    }, this.#everyMs);
    Deno.unrefTimer(this.#timer);
  }

  async #tick(): Promise<void> {
    const at = this.#files.strayAt;
    const now = this.#files.now();
    if (at === undefined || now - at < this.#ageMs) return;
    try {
      await this.#sweep(this.#ageMs);
      // Covered: every file left behind up to `now - ageMs` (the sweep's cutoff).
      this.#files.swept(now - this.#ageMs);
    } catch (err) {
      this.#failed(err);
    }
  }

  /** Stops; waits for a sweep under way. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
