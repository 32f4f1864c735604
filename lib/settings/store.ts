/**
 * The settings in the database (`mb_settings`, one row): every instance
 * reads the same. `read()` asks the database; `current()` is the cached
 * read for the paths that need settings often (the mail sender, templates):
 * at most `maxAgeMs` old, and dropped at once when another instance
 * announces a change (`SETTINGS_CHANNEL`, wired in lib/core.ts through
 * `InstanceSync.on`, as schema changes are).
 *
 * @module
 */

import type { Queryable, Storage } from "../db/storage.ts";
import { pgNotify } from "../db/pg_notify.ts";
import { mergeShape } from "../schema/shape.ts";
import { defaultSettings, type Settings } from "./types.ts";
import { applySettingsPatch, SETTINGS_SHAPE } from "./validate.ts";

/** The NOTIFY channel of settings changes (PostgreSQL). */
export const SETTINGS_CHANNEL = "mb_settings";

const KEY = "settings";

/** Reads and changes the shared settings. */
export class SettingsStore {
  #storage: Storage;
  #maxAgeMs: number;
  #cached: { value: Settings; at: number } | undefined;
  #reading: Promise<Settings> | undefined;
  #generation = 0;

  /** `maxAgeMs`: how old a cached read may be (default 1 s). */
  constructor(storage: Storage, maxAgeMs = 1000) {
    this.#storage = storage;
    this.#maxAgeMs = maxAgeMs;
  }

  /** The settings as stored now (defaults for what was never set). */
  async read(q: Queryable = this.#storage, lock = false): Promise<Settings> {
    const rows = await q.query(
      `SELECT "value" FROM "mb_settings" WHERE "key" = ?${
        lock ? this.#storage.dialect.forUpdate : ""
      }`,
      [KEY],
    );
    if (rows.length === 0) return defaultSettings();
    let stored: unknown;
    try {
      stored = JSON.parse(String(rows[0].value));
    } catch {
      stored = {}; // unreadable (edited by hand): the defaults
    }
    // Keys a later version added get their defaults; the stored values were
    // checked when they were written, so problems are not expected (and a
    // value that no longer passes keeps its default).
    return mergeShape(SETTINGS_SHAPE, defaultSettings(), stored, {});
  }

  /**
   * The settings, from a cache at most `maxAgeMs` old. Inside a
   * transaction pass it as `q`: a read outside it would wait for its end
   * on SQLite (one connection).
   */
  current(q?: Queryable): Promise<Settings> {
    const c = this.#cached;
    if (c && performance.now() - c.at < this.#maxAgeMs) {
      return Promise.resolve(c.value);
    }
    if (this.#reading && !q) return this.#reading;
    const generation = this.#generation;
    const at = performance.now();
    const reading = this.read(q).then((value) => {
      // A change announced while reading: this value may predate it.
      if (generation === this.#generation) this.#cached = { value, at };
      return value;
    });
    if (q) return reading;
    const shared: Promise<Settings> = reading.finally(() => {
      if (this.#reading === shared) this.#reading = undefined;
    });
    this.#reading = shared;
    return shared;
  }

  /** Forgets the cached settings (another instance changed them). */
  invalidate(): void {
    this.#generation++;
    this.#cached = undefined;
    this.#reading = undefined;
  }

  /**
   * Applies a partial change (400 with `data.fields` when invalid) in one
   * transaction, and returns the new settings.
   */
  async update(input: unknown): Promise<Settings> {
    const next = await this.#storage.transaction(async (tx) => {
      // The row exists before it is locked, so two changes take turns.
      await tx.run(
        `INSERT INTO "mb_settings" ("key", "value", "updated") VALUES (?, ?, ?) ON CONFLICT ("key") DO NOTHING`,
        [KEY, JSON.stringify(defaultSettings()), Date.now()],
      );
      const merged = applySettingsPatch(await this.read(tx, true), input);
      await tx.run(
        `UPDATE "mb_settings" SET "value" = ?, "updated" = ? WHERE "key" = ?`,
        [JSON.stringify(merged), Date.now(), KEY],
      );
      if (this.#storage.dialect.name === "postgres") {
        // Delivered at commit, to every instance listening.
        await pgNotify(tx, SETTINGS_CHANNEL, "");
      }
      return merged;
    });
    this.invalidate();
    return next;
  }
}
