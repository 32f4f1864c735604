/// <reference lib="dom" />
/**
 * What deleting records takes with it: relation fields declared with
 * `on_delete: "cascade"` that point at the entity (read from the loaded
 * schemas), the records they would delete (counted through the list API,
 * `count=true`, where the entity has an API), and the entities further
 * down the cascade (named, not counted). The delete dialogs of the record
 * editor and of bulk delete show these lines.
 *
 * @module
 */

import { mb } from "../mb.ts";
import { literal } from "./records_query.ts";
import type { EntitySchema } from "../schemas.ts";

/** A relation field that deletes its records with the record it points at. */
export interface CascadeLink {
  entity: string;
  field: string;
}

/** Ids per count request (the filter language allows 4096 characters). */
const IDS_PER_COUNT = 40;

/** The cascade links that point at `entity`. */
export function cascadeLinks(
  all: readonly EntitySchema[],
  entity: string,
): CascadeLink[] {
  const out: CascadeLink[] = [];
  for (const s of all) {
    for (const f of s.fields) {
      if (
        f.type === "relation" && f.foreign_key?.entity === entity &&
        f.foreign_key.on_delete === "cascade"
      ) out.push({ entity: s.name, field: f.name });
    }
  }
  return out;
}

/**
 * Entities the cascade reaches beyond its first step from `from` (each
 * once, in the order reached; not those of the first step).
 */
export function furtherCascades(
  all: readonly EntitySchema[],
  from: readonly string[],
  root: string,
): string[] {
  const seen = new Set([root, ...from]);
  const out: string[] = [];
  const queue = [...from];
  while (queue.length > 0) {
    const e = queue.shift()!;
    for (const l of cascadeLinks(all, e)) {
      if (seen.has(l.entity)) continue;
      seen.add(l.entity);
      out.push(l.entity);
      queue.push(l.entity);
    }
  }
  return out;
}

/** How many records of `link` point at one of `ids` (null: unknown). */
async function countLinked(
  link: CascadeLink,
  ids: readonly string[],
): Promise<number | null> {
  if (ids.length === 0 || ids.length > IDS_PER_COUNT) return null;
  const filter = ids.map((id) => `${link.field} == ${literal(id)}`).join(
    " || ",
  );
  try {
    const p = await mb.entity(link.entity).list({
      filter,
      count: true,
      limit: 1,
      fields: "id",
    });
    return p.total ?? null;
  } catch {
    return null; // no API, or not counted: the entity is still named
  }
}

const records = (n: number) => `${n} record${n === 1 ? "" : "s"}`;

/**
 * The lines a delete dialog shows for deleting `ids` of `entity`:
 * "2 records of comments (their post)", then "records of likes that point
 * at those". Empty when nothing cascades (or every count is 0).
 */
export async function cascadeLines(
  all: readonly EntitySchema[],
  entity: string,
  ids: readonly string[],
): Promise<string[]> {
  const links = cascadeLinks(all, entity);
  const counts = await Promise.all(links.map((l) => countLinked(l, ids)));
  const lines: string[] = [];
  const reached: string[] = [];
  links.forEach((l, i) => {
    const n = counts[i];
    if (n === 0) return;
    reached.push(l.entity);
    lines.push(
      `${
        n === null ? "The records" : records(n)
      } of ${l.entity} whose ${l.field} points at ${
        ids.length === 1 ? "it" : "them"
      }`,
    );
  });
  const further = furtherCascades(all, [...new Set(reached)], entity);
  if (further.length > 0) {
    lines.push(
      `Records of ${further.join(", ")} that point at those (cascade)`,
    );
  }
  return lines;
}
