/**
 * The two calls of the schema export/import page, through the dashboard's
 * API layer (`api.ts`).
 *
 * @module
 */

import { api } from "../api.ts";
import type { ImportAnswer } from "./transfer_diff.ts";
import type { SchemaBody } from "./transfer_file.ts";

/** `GET /api/v1/schemas/export`: every schema, in dependency order. */
export async function exportSchemas(): Promise<SchemaBody[]> {
  const out = await api.get<{ schemas: SchemaBody[] }>("/schemas/export");
  return out.schemas;
}

/**
 * `POST /api/v1/schemas/import`: a dry run unless `dryRun` is false (then
 * applied in one transaction, all or nothing).
 */
export function importSchemas(
  schemas: readonly SchemaBody[],
  options: { dryRun: boolean; deleteMissing: boolean },
): Promise<ImportAnswer> {
  return api.post<ImportAnswer>("/schemas/import", {
    schemas,
    delete_missing: options.deleteMissing,
    dry_run: options.dryRun,
  });
}
