/**
 * The shape of a read answer beyond the stored record: the `expand` and
 * `fields` parameters checked (before anything is read or written: a write
 * must not happen when its answer cannot be given) into an `AnswerShape`,
 * then applied to the records read, each expanded record only if it passes
 * its own entity's rule for the caller (`expand/expander.ts`).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { RecordData } from "./codec.ts";
import type { RuleRequest } from "./rule_types.ts";
import { isExposed } from "./access.ts";
import { parseExpand } from "./expand/paths.ts";
import { canUseAs, type ExpandNode, planExpand } from "./expand/plan.ts";
import {
  type FieldNames,
  parseFields,
  project,
  type Projection,
} from "./expand/fields.ts";
import { expandRecords, type ExpandScope } from "./expand/expander.ts";
import { readRequest, type ServedAccess } from "./served_access.ts";

/**
 * What a read answer shows beyond the stored record, from the `expand` and
 * `fields` parameters, checked before anything is read or written.
 */
export interface AnswerShape {
  readonly plan: readonly ExpandNode[];
  readonly fields?: Projection;
}

/** The parameters of an answer's shape (the rest is the operation's). */
export const SHAPE_PARAMS = ["expand", "fields"] as const;

/**
 * The shape `query`'s `expand` and `fields` ask of `entity`'s records
 * (undefined: as stored), or a 400 naming what is unknown; `action`
 * starts the message (`list records`).
 */
export function answerShape(
  served: ServedAccess,
  entity: Entity,
  query: URLSearchParams,
  auth: AuthValue,
  action: string,
): AnswerShape | undefined {
  for (const p of SHAPE_PARAMS) {
    if (query.getAll(p).length > 1) {
      throw new MoonbaseError(
        "invalid",
        `Cannot ${action}: parameter "${p}" given twice`,
      );
    }
  }
  const expand = query.get("expand") ?? "";
  const fields = query.get("fields") ?? "";
  if (expand.trim() === "" && fields.trim() === "") return undefined;
  const canUse = canUseAs(auth);
  const plan = planExpand(
    { lookup: (name) => served.registry.byName(name), canUse, action },
    entity,
    parseExpand(expand, action),
  );
  const names: FieldNames = (name) => {
    const e = served.registry.byName(name);
    return e ? readableNames(e) : undefined;
  };
  return {
    plan,
    ...(fields.trim() !== "" && {
      fields: parseFields(fields, readableNames(entity), plan, names, action),
    }),
  };
}

/**
 * Records of `entity` as `shape` shows them to `auth`: each expanded
 * record only if it passes its own entity's rule for `auth` (read as a
 * GET with `req`'s query would), then the fields kept.
 */
export async function present(
  served: ServedAccess,
  entity: Entity,
  records: readonly RecordData[],
  shape: AnswerShape,
  auth: AuthValue,
  req: RuleRequest,
): Promise<RecordData[]> {
  const now = served.registry.get(entity.id) ?? entity;
  const out = await expandRecords(
    expandScope(served, auth, readRequest(req), "expand records"),
    now,
    records,
    shape.plan,
  );
  const fields = shape.fields;
  return fields ? out.map((r) => project(r, fields)) : out;
}

/**
 * What expansions for `auth` may read: the entities the API serves, each
 * by its rule for `auth` (`req`: the request its rules see).
 */
export function expandScope(
  served: ServedAccess,
  auth: AuthValue,
  req: RuleRequest,
  action: string,
): ExpandScope {
  return {
    action,
    entity: (name) => {
      const e = served.registry.byName(name);
      if (!isExposed(e, name)) return undefined;
      return served.registry.viewRefusal(e.id) === undefined ? e : undefined;
    },
    // Refused outright (401/403 on its own route): absent here.
    access: (e, op) => served.readable(e, op, auth, req),
  };
}

/** A record's readable field names (never `password`). */
function readableNames(entity: Entity): Set<string> {
  return new Set(
    entity.fields.map((f) => f.name).filter((n) => n !== "password"),
  );
}
