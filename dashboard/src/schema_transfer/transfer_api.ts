/**
 * The two calls of the schema export/import page, through the client's
 * `mb.schemas.export()` and `mb.schemas.import()`; the import's details
 * (typed `unknown` by the client) read into the page's shape.
 *
 * @module
 */

import { mb } from "../mb.ts";
import type { Action, ChangeDetail, ImportAnswer } from "./transfer_diff.ts";
import type { SchemaBody } from "./transfer_file.ts";

const ACTIONS: readonly string[] = ["create", "update", "delete"];

function isAction(v: unknown): v is Action {
  return typeof v === "string" && ACTIONS.includes(v);
}

/** The details the page can show (anything else is left out). */
function detailsOf(details: readonly unknown[]): ChangeDetail[] {
  return details.filter((d): d is ChangeDetail => {
    const o = d as Partial<ChangeDetail> | null;
    return o !== null && typeof o === "object" && typeof o.key === "string" &&
      isAction(o.action);
  });
}

/** `GET /api/v1/schemas/export`: every schema, in dependency order. */
export function exportSchemas(): Promise<SchemaBody[]> {
  return mb.schemas.export();
}

/**
 * `POST /api/v1/schemas/import`: a dry run unless `dryRun` is false (then
 * applied in one transaction, all or nothing).
 */
export async function importSchemas(
  schemas: readonly SchemaBody[],
  options: { dryRun: boolean; deleteMissing: boolean },
): Promise<ImportAnswer> {
  const answer = await mb.schemas.import(schemas, options);
  return {
    dry_run: answer.dry_run,
    changes: answer.changes.filter((c) => isAction(c.action)).map((c) => ({
      entity: c.entity,
      action: c.action,
      details: detailsOf(c.details),
    })),
  };
}
