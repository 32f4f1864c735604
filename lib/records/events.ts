/**
 * Record events: the hooks extension scripts attach to record writes
 * (`app.onRecord(event, entity, fn)`). Before-hooks run inside the write's
 * transaction, after validation and after the access rule let the caller at
 * the record; after-hooks run once the write committed. `Entity` fires them,
 * so writes from the HTTP API, the dashboard and the library alike do.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Queryable } from "../db/storage.ts";
import type { RecordData } from "./codec.ts";

/** The six moments of a write a hook may attach to. */
export type RecordEventName =
  | "beforeCreate"
  | "afterCreate"
  | "beforeUpdate"
  | "afterUpdate"
  | "beforeDelete"
  | "afterDelete";

/** Every event name, in the order a write passes them. */
export const RECORD_EVENTS: readonly RecordEventName[] = [
  "beforeCreate",
  "afterCreate",
  "beforeUpdate",
  "afterUpdate",
  "beforeDelete",
  "afterDelete",
];

/** What a hook receives. */
export interface RecordEvent {
  /** The event's name. */
  readonly event: RecordEventName;
  /** The entity's name. */
  readonly entity: string;
  /**
   * The record being written (update: the new version; delete: the record
   * as it was). A before-hook may change it: the changes are validated again
   * and saved.
   */
  record: RecordData;
  /** Update and delete: the stored record before the write. */
  readonly previous?: RecordData;
  /** The caller (library and cron writes: the program itself, as admin). */
  readonly auth: AuthValue;
  /**
   * SQL with `?` placeholders: before-hooks run it in the write's
   * transaction (it commits or rolls back with the record); after-hooks on
   * the database directly.
   */
  readonly db: Queryable;
}

/** A hook; a throw in a before-hook rejects the write. */
export type RecordHook = (e: RecordEvent) => void | Promise<void>;

interface Entry {
  entity: string;
  fn: RecordHook;
  /** Where the hook comes from (a script file), for the log. */
  source: string;
}

/** Reports a failed after-hook (the write itself stands). */
export type HookFailure = (
  err: unknown,
  where: { event: RecordEventName; entity: string; source: string },
) => void;

/**
 * The hooks of one app, by event. Swapped as a whole when scripts reload.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RecordEvents } from "moonbase/lib/records/events.ts";
 * const events = new RecordEvents();
 * events.on("beforeCreate", "posts", (e) => { e.record.slug = "x"; }, "a.ts");
 * assert.equal(events.has("beforeCreate", "posts"), true);
 * assert.equal(events.has("beforeCreate", "other"), false);
 * assert.equal(events.has("afterCreate", "posts"), false);
 * ```
 */
export class RecordEvents {
  #byEvent = new Map<RecordEventName, Entry[]>();

  /** Adds a hook for one entity (exact name) or every entity (`"*"`). */
  on(
    event: RecordEventName,
    entity: string,
    fn: RecordHook,
    source = "",
  ): void {
    if (!RECORD_EVENTS.includes(event)) {
      throw new Error(
        `Cannot add a record hook: unknown event ${
          JSON.stringify(event)
        } (use ${RECORD_EVENTS.join(", ")})`,
      );
    }
    if (typeof entity !== "string" || entity === "") {
      throw new Error('Cannot add a record hook: name an entity or "*"');
    }
    if (typeof fn !== "function") {
      throw new Error("Cannot add a record hook: the hook is not a function");
    }
    const list = this.#byEvent.get(event) ?? [];
    list.push({ entity, fn, source });
    this.#byEvent.set(event, list);
  }

  /** True when a hook would run for this event and entity. */
  has(event: RecordEventName, entity: string): boolean {
    return this.#byEvent.get(event)?.some((h) =>
      h.entity === "*" || h.entity === entity
    ) ?? false;
  }

  /** Runs the before-hooks in order; the first throw propagates. */
  async before(e: RecordEvent): Promise<void> {
    for (const h of this.#for(e.event, e.entity)) await h.fn(e);
  }

  /** Runs the after-hooks in order; a throw is reported, the rest still run. */
  async after(e: RecordEvent, report: HookFailure): Promise<void> {
    for (const h of this.#for(e.event, e.entity)) {
      try {
        await h.fn(e);
      } catch (err) {
        report(err, { event: e.event, entity: e.entity, source: h.source });
      }
    }
  }

  #for(event: RecordEventName, entity: string): Entry[] {
    return (this.#byEvent.get(event) ?? []).filter((h) =>
      h.entity === "*" || h.entity === entity
    );
  }
}

/**
 * The app's record hooks for its whole life: entities hold this one object,
 * and a reload of the scripts replaces the generation it hands out. A write
 * takes the generation once (`current`), so it runs one set of hooks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RecordEvents, RecordHooks } from "moonbase/lib/records/events.ts";
 * const hooks = new RecordHooks();
 * const next = new RecordEvents();
 * next.on("afterCreate", "posts", () => {});
 * assert.equal(hooks.current().has("afterCreate", "posts"), false);
 * hooks.replace(next);
 * assert.equal(hooks.current().has("afterCreate", "posts"), true);
 * ```
 */
export class RecordHooks {
  #current = new RecordEvents();

  /** The hooks in force now. */
  current(): RecordEvents {
    return this.#current;
  }

  /** Puts another generation in force (later writes run it). */
  replace(events: RecordEvents): void {
    this.#current = events;
  }
}
