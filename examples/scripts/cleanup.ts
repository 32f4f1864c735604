/**
 * Nightly cleanup: at 03:00 every night, delete the `audit_log` rows older
 * than 90 days. Each row is removed through its Entity, so record hooks
 * run and stored files of the deleted records are removed too (a bare
 * `DELETE` through `app.db` would skip both).
 *
 * Expects the entity `audit_log` (see audit.ts).
 *
 * @module
 */

import type { ScriptApp } from "../../mod.ts";

/** How long audit rows are kept. */
export const KEEP_DAYS = 90;

/** Deletes the rows older than `KEEP_DAYS`; resolves to how many. */
export async function cleanup(
  app: ScriptApp,
  now = new Date(),
): Promise<number> {
  const log = app.entities.get("audit_log");
  if (!log) return 0;
  const cutoff = new Date(now.getTime() - KEEP_DAYS * 86_400_000).toISOString();
  const query = new URLSearchParams({
    filter: `created < "${cutoff}"`,
    fields: "id",
    limit: "200",
  });
  let removed = 0;
  for (;;) {
    const page = await log.list(query);
    for (const row of page.items) {
      if (await log.remove(String(row.id))) removed++;
    }
    if (page.items.length === 0 || !page.has_more) break;
  }
  if (removed > 0) app.log.info("audit_log cleaned up", { removed, cutoff });
  return removed;
}

export default function (app: ScriptApp): void {
  app.cron("nightly-cleanup", "0 3 * * *", () => cleanup(app));
}
