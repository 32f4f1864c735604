/**
 * Audit log: every change and deletion of a post writes a row into
 * `audit_log`, in the same transaction as the write itself. If the write
 * fails or another hook rejects it, the audit row is rolled back with it;
 * if the audit row cannot be written, the write fails too.
 *
 * Expects the entities `posts` (any fields) and `audit_log` with the string
 * fields `entity`, `record_id`, `action`, `actor` and `changes` (JSON text
 * of the changed fields: `{"title": ["old", "new"]}`). Give `audit_log`
 * admin-only rules (the default) so users cannot read or forge it.
 *
 * `e.db` is the write's transaction (in a before-hook `app.db` and
 * `app.entities` join it too).
 *
 * Hooks of one event run in the scripts' name order: audit.ts sorts before
 * slug.ts, so it records the change as the request made it (a new title),
 * not the slug slug.ts then derives from it. To audit the final record,
 * give this file a name that sorts last (`zz_audit.ts`).
 *
 * @module
 */

import type { RecordEvent, ScriptApp } from "../../mod.ts";

type Values = Record<string, unknown>;

/** The fields whose value differs, as `{field: [before, after]}`. */
export function changes(before: Values, after: Values): Values {
  const out: Values = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (key === "updated") continue;
    const [a, b] = [before[key] ?? null, after[key] ?? null];
    if (JSON.stringify(a) !== JSON.stringify(b)) out[key] = [a, b];
  }
  return out;
}

async function audit(e: RecordEvent, action: string): Promise<void> {
  const now = new Date().toISOString();
  const diff = action === "update"
    ? changes(e.previous ?? {}, e.record)
    : { deleted: e.record.title ?? null };
  const actor = e.auth.type === "guest"
    ? "guest"
    : `${e.auth.type}:${e.auth.entity}:${e.auth.id}`;
  await e.db.run(
    `INSERT INTO "audit_log" ("id", "created", "updated", "entity", "record_id", "action", "actor", "changes")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      crypto.randomUUID(),
      now,
      now,
      e.entity,
      String(e.record.id),
      action,
      actor,
      JSON.stringify(diff),
    ],
  );
}

export default function (app: ScriptApp): void {
  app.onRecord("beforeUpdate", "posts", (e) => audit(e, "update"));
  app.onRecord("beforeDelete", "posts", (e) => audit(e, "delete"));
}
