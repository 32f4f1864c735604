/**
 * Record hooks around one write of an `Entity`: the before-hooks as the
 * `before` step of the write's transaction (their changes to `e.record`
 * checked again and merged into the write), the after-hooks once it
 * committed. Nothing here runs when no hook is registered for the write.
 *
 * @module
 */

import { isDeepStrictEqual } from "node:util";
import type { AuthValue } from "../caller.ts";
import type { Storage } from "../db/storage.ts";
import { openScope, WriteScope } from "./write_scope.ts";
import type { EntitySchema } from "../schema/types.ts";
import { type CheckedInput, checkInput, type RecordData } from "./codec.ts";
import type { WriteSteps } from "./crud.ts";
import type { EntityEnv } from "./entity_env.ts";
import type { RecordEventName } from "./events.ts";

/** The caller of library and cron writes: the program itself. */
export const PROGRAM: AuthValue = Object.freeze({
  id: "",
  entity: "",
  type: "admin",
  user: null,
});

/** Keys a hook cannot change: the server sets them. */
const FIXED = new Set(["id", "created", "updated"]);

/** The hooks of one write. */
export interface WriteHooks {
  /** The transaction step (undefined: no before- or after-hook needs it). */
  before?: WriteSteps["before"];
  /** Runs the after-hooks on the committed record. */
  after(record: RecordData): Promise<void>;
  /** True when a before-hook set a new password. */
  passwordSet: boolean;
  /** The scope the before-hooks run in (nested operations queue their after-commit work here). */
  scope: WriteScope;
}

/**
 * The hooks of a create, update or delete by `caller` (hooks see it as
 * `e.auth`), or undefined when none is registered. `hash` hashes a
 * password a hook sets (true when it did); after-hooks query `db` (the
 * write has committed).
 */
export function writeHooks(
  schema: EntitySchema,
  env: EntityEnv,
  db: Storage,
  op: "Create" | "Update" | "Delete",
  caller: AuthValue | undefined,
  values: CheckedInput | undefined,
  hash: (values: CheckedInput) => Promise<boolean>,
): WriteHooks | undefined {
  const events = env.hooks.current();
  const beforeName = `before${op}` as RecordEventName;
  const afterName = `after${op}` as RecordEventName;
  const hasBefore = events.has(beforeName, schema.name);
  const hasAfter = events.has(afterName, schema.name);
  if (!hasBefore && !hasAfter) return undefined;
  const auth = caller ?? PROGRAM;
  let previous: RecordData | undefined;
  const scope = new WriteScope(db);
  const out: WriteHooks = {
    passwordSet: false,
    scope,
    async before(record, tx, prev) {
      previous = prev;
      if (!hasBefore) return undefined;
      // In a batch, the writes before this one were sent without waiting
      // (`WriteScope.send`): a hook runs only once they stood, as it would
      // after them one by one (it may act beyond the database).
      const failed = await openScope(db)?.settle();
      if (failed) throw failed.error;
      const e = {
        event: beforeName,
        entity: schema.name,
        record: structuredClone(record),
        previous: prev && structuredClone(prev),
        auth,
        db: tx,
      };
      await scope.run(tx, () => events.before(e));
      if (op === "Delete" || !values) return undefined;
      const changed = await recheck(schema, record, e.record, hash);
      if (!changed) return undefined;
      out.passwordSet ||= changed.password;
      return new Map([...values, ...changed.values]);
    },
    async after(record) {
      if (!hasAfter) return;
      await events.after({
        event: afterName,
        entity: schema.name,
        record,
        previous,
        auth,
        db,
      }, env.hookFailed);
    },
  };
  return out;
}

/**
 * The values a before-hook changed, checked as an update would check them
 * (file fields and server-set keys stay as they were).
 */
async function recheck(
  schema: EntitySchema,
  before: RecordData,
  after: RecordData,
  hash: (values: CheckedInput) => Promise<boolean>,
): Promise<{ values: CheckedInput; password: boolean } | undefined> {
  const patch: Record<string, unknown> = {};
  const files = new Set(
    schema.fields.filter((f) => f.type === "file" || f.type === "files")
      .map((f) => f.name),
  );
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (FIXED.has(key) || files.has(key)) continue;
    if (!isDeepStrictEqual(before[key], after[key])) {
      patch[key] = after[key] ?? null;
    }
  }
  if (Object.keys(patch).length === 0) return undefined;
  const values = checkInput(schema, patch, "update");
  return { values, password: await hash(values) };
}

/**
 * Runs what a write does once committed: the work its hooks' nested
 * operations queued, then `work`. Inside another write's hooks on `base`
 * (this write joined it, nothing is committed yet), all of it waits for that
 * write instead.
 */
export async function afterCommit(
  base: Storage,
  hooks: WriteHooks | undefined,
  work: () => Promise<void> | undefined,
): Promise<void> {
  const all = async () => {
    await hooks?.scope.flush();
    await work();
  };
  const outer = openScope(base);
  if (outer) outer.defer(all);
  else await all();
}
