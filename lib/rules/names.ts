/**
 * The names a rule may read under `record.`, `auth.` and `req.`, and the message for
 * one it may not: the parser refuses `record.autor` when the entity has no
 * field `autor`, naming the closest existing name. One home for the
 * suggestion, used by rules and by the list `filter` (bare field names).
 *
 * @module
 */

/**
 * A field as relation reads see it: its type and, for a relation, the
 * entity it points at (`multiple`: it holds a list of ids).
 */
export interface ShapeField {
  readonly type: string;
  readonly target?: string;
  readonly multiple?: boolean;
}

/** An entity as relation reads see it. */
export interface ShapeEntity {
  readonly name: string;
  /** A field rules may read (never `password`). */
  field(name: string): ShapeField | undefined;
  /** The names rules may read, for suggestions. */
  readonly fieldNames: readonly string[];
  /**
   * Set when the reader may not read this entity's records at all (a
   * caller's filter): why, e.g. `users records are not yours to read`.
   */
  readonly refused?: string;
}

/**
 * The entities an expression reads: the record's (rules: `record`;
 * filters: the bare names), `auth.user`'s, any by name, and the
 * back-relations (`<entity>_via_<field>`, resolved as `expand` resolves
 * them: lib/records/expand/plan.ts); `relations.ts` reads through them.
 */
export interface Shapes {
  readonly record?: ShapeEntity;
  readonly user?: ShapeEntity;
  entity(name: string): ShapeEntity | undefined;
  back(
    of: ShapeEntity,
    name: string,
  ): { entity: ShapeEntity; field: string } | undefined;
}

/**
 * Names known to a rule of one entity (docs/reference/rule-language.md): `record` =
 * the entity's field names (built-ins included, `password` never); `user` =
 * the fields any auth entity's records have (their union, built-ins
 * included, `password` never): the caller may come from any auth entity.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { KnownNames } from "moonbase/lib/rules/names.ts";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * const names: KnownNames = {
 *   record: new Set(["id", "owner"]),
 *   user: new Set(["id", "email"]),
 * };
 * parseExpression("record.owner == auth.id", { mode: "rule", names });
 * assert.throws(
 *   () => parseExpression("record.ownr == auth.id", { mode: "rule", names }),
 *   /unknown name "record.ownr" \(did you mean "record.owner"\?\) at 7/,
 * );
 * ```
 */
export interface KnownNames {
  record: ReadonlySet<string>;
  user: ReadonlySet<string>;
  /**
   * The names `req.body.<name>` may read: the entity's fields (`password`
   * included). A body with any other key is refused (400) before it is
   * written, so another name always reads `undefined` — under `!=` a typo
   * would let every write through. Absent: not checked.
   */
  body?: ReadonlySet<string>;
  /**
   * The field type of each `record.<field>` (absent: members of fields are
   * not checked): a member of a field's value is refused when the value
   * cannot have it (see {@link memberProblem}).
   */
  types?: ReadonlyMap<string, string>;
  /**
   * The entities read through relations (`record.project.owner`,
   * `record.comments_via_post`): given, every name read through a relation
   * is checked too, at any depth (`relations.ts`).
   */
  shapes?: Shapes;
}

/**
 * Why `<name>.<property>` reads nothing when `name` holds a field of `type`,
 * or undefined when it may read something: anything in `json` and `files`;
 * `.length` and an index in the strings (text fields, `select`, `file`,
 * `date`); nothing in numbers and booleans. A `relation` reads into the
 * related record (`record.owner.email`): which names it has is checked
 * where the relations are known (`relations.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { memberProblem } from "moonbase/lib/rules/names.ts";
 * assert.equal(memberProblem("record.meta", "json", "any"), undefined);
 * assert.equal(memberProblem("record.title", "string", "length"), undefined);
 * assert.equal(memberProblem("record.title", "string", "0"), undefined);
 * assert.equal(memberProblem("record.owner", "relation", "email"), undefined);
 * assert.equal(
 *   memberProblem("record.n", "int", "length"),
 *   '"record.n.length" reads nothing: record.n is a number (it has no members)',
 * );
 * ```
 */
export function memberProblem(
  name: string,
  type: string,
  property: string,
): string | undefined {
  const head = `${
    JSON.stringify(`${name}.${property.slice(0, 64)}`)
  } reads nothing: ${name}`;
  switch (type) {
    case "json":
    case "files":
    case "relation":
      return undefined;
    case "int":
    case "double":
      return `${head} is a number (it has no members)`;
    case "bool":
      return `${head} is a boolean (it has no members)`;
  }
  if (property === "length" || /^[0-9]+$/.test(property)) return undefined;
  if (type === "relation[]") {
    return `${head} is a multiple relation, a list of the related records' ids (.length, [index] and .includes(id) read into it; .some(r => …) and .every(r => …) read the records)`;
  }
  return `${head} is a string (only .length and [index] read into it)`;
}

/** The members of `req` (docs/reference/rule-language.md). */
export const REQ_MEMBERS: ReadonlySet<string> = new Set([
  "body",
  "query",
  "method",
]);

/** The members of `auth` (docs/reference/rule-language.md). */
export const AUTH_MEMBERS: ReadonlySet<string> = new Set([
  "id",
  "entity",
  "type",
  "user",
]);

/**
 * Edit distance of two short names: insertions, deletions, substitutions
 * and swaps of neighbours count one each; a difference in case alone half.
 */
function distance(a: string, b: string): number {
  if (a.toLowerCase() === b.toLowerCase()) return a === b ? 0 : 0.5;
  a = a.toLowerCase();
  b = b.toLowerCase();
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        prev[j] + 1,
        row[j - 1] + 1,
        prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (
        i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]
      ) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length];
}

/**
 * The known name closest to `name`, when one is close enough to be a typo
 * (at most one change per three characters, at least one); the first in
 * `known`'s order wins a tie.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { closestName } from "moonbase/lib/rules/names.ts";
 * assert.equal(closestName("autor", ["title", "author"]), "author");
 * assert.equal(closestName("Owner", ["owner"]), "owner");
 * assert.equal(closestName("titel", ["tags", "title"]), "title");
 * assert.equal(closestName("xyz", ["title", "author"]), undefined);
 * ```
 */
export function closestName(
  name: string,
  known: Iterable<string>,
): string | undefined {
  if (name.length > 64) return undefined;
  const limit = Math.max(1, Math.floor(name.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(name, k);
    if (d <= limit && d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * The parser's detail for an unknown name under `prefix` (`record`,
 * `auth.user`, `auth`; `""` for a bare filter field): the closest known
 * name, or else (with a prefix) what is known there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unknownName } from "moonbase/lib/rules/names.ts";
 * assert.equal(
 *   unknownName("autor", "record", ["id", "author"]),
 *   'unknown name "record.autor" (did you mean "record.author"?)',
 * );
 * assert.equal(
 *   unknownName("xyz", "record", ["id", "title"]),
 *   'unknown name "record.xyz" (record has: id, title)',
 * );
 * assert.equal(unknownName("nope", "", ["title"]), 'unknown name "nope"');
 * ```
 */
export function unknownName(
  name: string,
  prefix: string,
  known: Iterable<string>,
): string {
  const full = (n: string) => prefix === "" ? n : `${prefix}.${n}`;
  const shown = JSON.stringify(full(name.slice(0, 64)));
  const near = closestName(name, known);
  if (near !== undefined) {
    return `unknown name ${shown} (did you mean ${
      JSON.stringify(full(near))
    }?)`;
  }
  if (prefix === "") return `unknown name ${shown}`;
  const list = [...known];
  const more = list.length > 12 ? ", …" : "";
  return `unknown name ${shown} (${prefix} has: ${
    list.length === 0 ? "nothing" : list.slice(0, 12).join(", ") + more
  })`;
}
