/**
 * Removing files no record references: at start (after a crash between an
 * upload and its commit) and after a file field is dropped.
 *
 * @module
 */

import type { Entity } from "../records/entity.ts";
import { fileNames } from "../records/file_values.ts";
import type { Registry } from "../records/registry.ts";
import type { FileStore } from "./store.ts";

/** Deletes an entity's unreferenced files; returns how many. */
export async function sweepEntity(
  entity: Entity,
  files: FileStore,
  minAgeMs = 0,
): Promise<number> {
  if (entity.type === "view") return 0;
  const referenced = new Set<string>();
  if (
    entity.schema.fields.some((f) => f.type === "file" || f.type === "files")
  ) {
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
  }
  return await files.sweep(entity.id, referenced, minAgeMs);
}

/**
 * Sweeps every entity, and removes directories of entities that no longer
 * exist.
 *
 * @example
 * ```ts ignore
 * const removed = await sweepAll(app.schemas, app.files);
 * ```
 */
export async function sweepAll(
  registry: Registry,
  files: FileStore,
  minAgeMs = 0,
): Promise<number> {
  let n = 0;
  const ids = new Set<string>();
  for (const e of registry.all()) {
    ids.add(e.id);
    n += await sweepEntity(e, files, minAgeMs);
  }
  try {
    for await (const d of Deno.readDir(files.root)) {
      if (d.isDirectory && !ids.has(d.name)) {
        await Deno.remove(`${files.root}/${d.name}`, { recursive: true });
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return n;
}
