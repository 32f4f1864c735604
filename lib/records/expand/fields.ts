/**
 * The `fields` parameter as paths into a record's JSON, expansions included:
 * `fields=id,title,expand.author.name,expand.comments_via_post.expand.author`.
 * `expand` alone keeps every expansion; `expand.<key>` keeps one whole;
 * `expand.<key>.<field>` keeps some of its fields (for arrays, of each
 * element). Without an `expand…` entry the expansions are left out.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";
import type { RecordData } from "../codec.ts";
import { EXPAND_KEY, type ExpandNode, putKey } from "./plan.ts";

/** What to keep of a record. */
export interface Projection {
  /** Its own fields to keep. */
  readonly names: Set<string>;
  /** Its expansions to keep: all (`true`), or by key (`true`: whole). */
  expand?: true | Map<string, Projection | true>;
}

/** The readable field names of an entity, or undefined when they must not be checked (an entity the caller cannot see). */
export type FieldNames = (entity: string) => ReadonlySet<string> | undefined;

/**
 * Parses `fields` for records of an entity whose readable fields are
 * `root`, expanded by `plan`; `action` starts a 400's message. Every name
 * must exist.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseFields, project } from "moonbase/lib/records/expand/fields.ts";
 * const plan = [{ key: "author", path: "author", kind: "forward" as const, field: "author",
 *   entity: "users", served: true, children: [] }];
 * const names = (e: string) => new Set(e === "users" ? ["id", "name"] : ["id", "title", "author"]);
 * const p = parseFields("id,expand.author.name", names("posts"), plan, names, "list records");
 * const rec = { id: "p1", title: "t", author: "u1", expand: { author: { id: "u1", name: "Ann" } } };
 * assert.deepEqual(project(rec, p), { id: "p1", expand: { author: { name: "Ann" } } });
 * assert.throws(() => parseFields("expand.editor", names("posts"), plan, names, "list records"), { code: "invalid" });
 * ```
 */
export function parseFields(
  value: string,
  root: ReadonlySet<string>,
  plan: readonly ExpandNode[],
  names: FieldNames,
  action: string,
): Projection {
  const top: Projection = { names: new Set() };
  for (const raw of value.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    place(top, entry.split("."), entry, root, plan, names, action);
  }
  return top;
}

function unknownField(action: string, entry: string, why = ""): never {
  throw new MoonbaseError(
    "invalid",
    `Cannot ${action}: unknown field ${
      JSON.stringify(entry.slice(0, 200))
    } in fields${why}`,
  );
}

function place(
  at: Projection,
  parts: string[],
  entry: string,
  own: ReadonlySet<string> | undefined,
  plan: readonly ExpandNode[],
  names: FieldNames,
  action: string,
): void {
  const [head, ...rest] = parts;
  if (head === EXPAND_KEY && plan.length > 0) {
    if (rest.length === 0) {
      at.expand = true;
      return;
    }
    const node = plan.find((n) => n.key === rest[0]);
    if (!node) {
      unknownField(
        action,
        entry,
        ` (expand does not ask for ${JSON.stringify(rest[0].slice(0, 100))})`,
      );
    }
    if (at.expand === true) return;
    const map: Map<string, Projection | true> = at.expand ?? new Map();
    at.expand = map;
    if (rest.length === 1) {
      map.set(node.key, true);
      return;
    }
    let sub = map.get(node.key);
    if (sub === true) return;
    if (!sub) map.set(node.key, sub = { names: new Set() });
    const fields = node.served ? names(node.entity) : undefined;
    place(sub, rest.slice(1), entry, fields, node.children, names, action);
    return;
  }
  if (rest.length > 0) {
    unknownField(
      action,
      entry,
      head === EXPAND_KEY ? " (expand does not ask for it)" : "",
    );
  }
  // Inside an expansion the caller cannot see, names are not checked: a
  // 400 for some and not others would tell that entity's fields.
  if (own && !own.has(head)) unknownField(action, entry);
  at.names.add(head);
}

/** A record with only what `p` keeps (a new object; `record` is untouched). */
export function project(record: RecordData, p: Projection): RecordData {
  const out: RecordData = {};
  for (const name of p.names) {
    if (Object.hasOwn(record, name)) putKey(out, name, record[name]);
  }
  const expand = record[EXPAND_KEY];
  if (p.expand && expand && typeof expand === "object") {
    if (p.expand === true) out[EXPAND_KEY] = expand;
    else {
      const from = expand as Record<string, unknown>;
      const kept: Record<string, unknown> = {};
      for (const [key, sub] of p.expand) {
        if (!Object.hasOwn(from, key)) continue;
        const v = from[key];
        putKey(
          kept,
          key,
          sub === true
            ? v
            : Array.isArray(v)
            ? v.map((r) => project(r as RecordData, sub))
            : project(v as RecordData, sub),
        );
      }
      out[EXPAND_KEY] = kept;
    }
  }
  return out;
}
