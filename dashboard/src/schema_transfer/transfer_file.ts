/**
 * Reading a schema file for import: the export's body `{schemas: [...]}`,
 * the whole envelope of `GET /api/v1/schemas/export` (`{data: {schemas}}`)
 * or a bare list of schemas; what is wrong said in plain words (where the
 * JSON breaks, which item is no schema). The schemas themselves are
 * checked by the server's dry run. Pure: no DOM, unit-tested.
 *
 * @module
 */

import { parseJson } from "../schema/json_error.ts";

/** A schema as the file holds it (the server checks the rest). */
export type SchemaBody = Record<string, unknown>;

/** The schemas of a file, or what is wrong with it. */
export type ReadFile =
  | { ok: true; schemas: SchemaBody[] }
  | { ok: false; message: string; offset?: number };

function isRaw(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

const SHAPE = 'Cannot read the schemas: expected {"schemas": [...]}, as ' +
  "Export downloads it";

/** The schemas of a file's text. */
export function readSchemaFile(text: string): ReadFile {
  if (text.trim() === "") {
    return {
      ok: false,
      message: "Cannot read the schemas: choose a file or paste its JSON",
    };
  }
  const parsed = parseJson(text);
  if (!parsed.ok) {
    return {
      ok: false,
      message: `Cannot read the schemas: ${parsed.message}`,
      offset: parsed.offset,
    };
  }
  let list: unknown = parsed.value;
  if (isRaw(list) && isRaw(list.data) && !("schemas" in list)) {
    list = list.data; // the whole envelope
  }
  if (isRaw(list)) {
    if (!("schemas" in list)) return { ok: false, message: SHAPE };
    list = list.schemas;
  }
  if (!Array.isArray(list)) return { ok: false, message: SHAPE };
  for (const [i, s] of list.entries()) {
    if (!isRaw(s) || typeof s.name !== "string" || s.name === "") {
      return {
        ok: false,
        message:
          `Cannot read the schemas: item ${i} is not a schema with a name`,
      };
    }
  }
  return { ok: true, schemas: list as SchemaBody[] };
}

/** The export's body as the file Export downloads (2-space JSON). */
export function exportText(schemas: readonly SchemaBody[]): string {
  return JSON.stringify({ schemas }, null, 2) + "\n";
}
