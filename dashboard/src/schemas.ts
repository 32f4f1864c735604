/// <reference lib="dom" />
/**
 * The schemas every page needs (sidebar, forms, tables), loaded once per
 * session and reloaded after a change; plus record counts for the sidebar.
 *
 * @module
 */

import { signal } from "@preact/signals";
import type { EntitySchema } from "../../lib/schema/types.ts";
import { mb, seg } from "./mb.ts";

export type { EntitySchema, FieldDef } from "../../lib/schema/types.ts";

/** All schemas, system ones included (null until loaded). */
export const schemas = signal<EntitySchema[] | null>(null);
/** Record count per entity name (missing when unknown). */
export const counts = signal<Record<string, number | null>>({});
/** Counts stop at 10 000: `/sys/counts` answers 10 001 for "more". */
export function countLabel(n: number): string {
  return n > 10_000 ? `${(10_000).toLocaleString()}+` : n.toLocaleString();
}
/** Why loading failed, in plain words ("" when fine). */
export const schemasError = signal("");

/** Loads (or reloads) the schemas and the counts. */
export async function reloadSchemas(): Promise<void> {
  try {
    schemas.value = await mb.send<EntitySchema[]>("GET", "/api/v1/schemas");
    schemasError.value = "";
  } catch (e) {
    schemasError.value = (e as Error).message;
  }
  void reloadCounts();
}

/** Reloads the record counts only (after records were added or deleted). */
export async function reloadCounts(): Promise<void> {
  try {
    counts.value = await mb.schemas.counts();
  } catch {
    // counts are a nicety: the sidebar shows none
  }
}

/** Creates an entity (`POST /api/v1/schemas`); resolves to its schema. */
export function createSchema(body: unknown): Promise<EntitySchema> {
  return mb.send("POST", "/api/v1/schemas", { body });
}

/** Changes an entity by id or name (`PATCH /api/v1/schemas/<id>`). */
export function updateSchema(
  idOrName: string,
  change: unknown,
): Promise<EntitySchema> {
  return mb.send("PATCH", `/api/v1/schemas/${seg(idOrName)}`, {
    body: change,
  });
}

/** The schema of an entity by name (undefined when unknown or not loaded). */
export function schemaOf(name: string): EntitySchema | undefined {
  return schemas.value?.find((s) => s.name === name);
}
