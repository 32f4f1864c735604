/**
 * Completions that follow relations, built from the schemas: after
 * `record.author.` the fields of the author's entity (and its relations,
 * to go on, at most 6 relations deep), after `auth.user.team.` the fields
 * of the teams (through any auth entity's relation of that name), and the
 * back-relations `<entity>_via_<field>` as lists: `.length`,
 * `.some(c => c.` and `.every(c => c.`. Inside such a call the variable
 * (`c.`) completes to the fields of that back-relation's entity. Filters
 * take the same paths with bare names (`author.name`). Pure: no DOM.
 *
 * @module
 */

import type { EntitySchema, FieldDef } from "../../../lib/schema/types.ts";
import { type ExprKind, wordBefore } from "./rule_vocabulary.ts";

/** Relations a path may follow (as rules and `expand` allow). */
export const MAX_HOPS = 6;

/** What a name at some point of a path stands for: records of entities. */
interface Level {
  /** The entities whose records the path reaches (several for `auth.user`). */
  entities: EntitySchema[];
  /** Relations followed so far. */
  hops: number;
  /** May back-relations be offered here (not after `auth.user`). */
  backs: boolean;
}

const NAME = /^[A-Za-z_$][\w$]*$/;

function served(all: readonly EntitySchema[]): EntitySchema[] {
  return all.filter((s) => s.has_api !== false && !s.is_system);
}

function fieldsOf(level: Level): FieldDef[] {
  const out = new Map<string, FieldDef>();
  for (const e of level.entities) {
    for (const f of e.fields) {
      if (f.name !== "password" && !out.has(f.name)) out.set(f.name, f);
    }
  }
  return [...out.values()];
}

/** The back-relations pointing at the level's entities, by name: [name, entity]. */
function backsOf(
  all: readonly EntitySchema[],
  level: Level,
): [string, EntitySchema][] {
  const out: [string, EntitySchema][] = [];
  const targets = new Set(level.entities.map((e) => e.name));
  for (const s of served(all)) {
    if (s.type === "view") continue;
    for (const f of s.fields) {
      if (
        f.type === "relation" && targets.has(f.foreign_key?.entity ?? "")
      ) out.push([`${s.name}_via_${f.name}`, s]);
    }
  }
  return out.sort((a, b) => a[0].localeCompare(b[0]));
}

/** The level reached through the single relation `name`, or null. */
function follow(
  all: readonly EntitySchema[],
  level: Level,
  name: string,
): Level | null {
  if (level.hops >= MAX_HOPS) return null;
  const targets = new Set<string>();
  for (const e of level.entities) {
    const f = e.fields.find((x) => x.name === name);
    if (f?.type === "relation" && !f.multiple && f.foreign_key?.entity) {
      targets.add(f.foreign_key.entity);
    }
  }
  const entities = served(all).filter((s) => targets.has(s.name));
  return entities.length > 0
    ? { entities, hops: level.hops + 1, backs: level.backs }
    : null;
}

/** The entity a back-relation `<entity>_via_<field>` of `level` lists. */
function backEntity(
  all: readonly EntitySchema[],
  level: Level,
  name: string,
): EntitySchema | null {
  return backsOf(all, level).find(([n]) => n === name)?.[1] ?? null;
}

/** A short variable for the records of `entity` not already taken. */
function variable(entity: string, taken: ReadonlySet<string>): string {
  const first = entity.charAt(0).toLowerCase();
  const base = /[a-z]/.test(first) ? first : "x";
  if (!taken.has(base)) return base;
  for (let i = 2;; i++) if (!taken.has(base + i)) return base + i;
}

/** Roots of a path: `record` / bare names, `auth.user`, lambda variables. */
type Scope = Map<string, Level>;

/** Follows `parts` from `level`; null when a part is no single relation. */
function walk(
  all: readonly EntitySchema[],
  level: Level,
  parts: readonly string[],
): Level | null {
  let at: Level | null = level;
  for (const p of parts) {
    if (!at) return null;
    at = follow(all, at, p);
  }
  return at;
}

/**
 * The root level of a dotted name and the parts after it: `record.a.b`
 * (rules), `a.b` (filters: bare names), `auth.user.a`, `c.a` for a lambda
 * variable `c` in scope.
 */
function rooted(
  parts: string[],
  kind: ExprKind,
  start: Level,
  user: Level,
  scope: Scope,
): { level: Level; rest: string[]; prefix: string } | null {
  if (parts[0] === "auth") {
    return parts[1] === "user" && user.entities.length > 0
      ? { level: user, rest: parts.slice(2), prefix: "auth.user." }
      : null;
  }
  const bound = scope.get(parts[0]);
  if (bound && parts.length > 1) {
    return { level: bound, rest: parts.slice(1), prefix: parts[0] + "." };
  }
  if (kind === "rule") {
    return parts[0] === "record"
      ? { level: start, rest: parts.slice(1), prefix: "record." }
      : null;
  }
  return { level: start, rest: parts, prefix: "" };
}

/**
 * The lambda variables in scope at the end of `text`: each
 * `<list>.some(v =>` / `.every(v =>` whose parenthesis is still open binds
 * `v` to the records of that back-relation.
 */
function lambdaScope(
  all: readonly EntitySchema[],
  text: string,
  kind: ExprKind,
  start: Level,
  user: Level,
): Scope {
  const scope: Scope = new Map();
  const re =
    /([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\.(some|every)\(\s*([A-Za-z_$][\w$]*)\s*=>/g;
  for (const m of text.matchAll(re)) {
    const open = m.index + m[0].indexOf("(");
    if (!stillOpen(text, open)) continue;
    const parts = m[1].split(".");
    const r = rooted(parts, kind, start, user, scope);
    if (!r || r.rest.length === 0) continue;
    const through = walk(all, r.level, r.rest.slice(0, -1));
    if (!through || !through.backs) continue;
    const e = backEntity(all, through, r.rest[r.rest.length - 1]);
    if (e) scope.set(m[3], { entities: [e], hops: 0, backs: true });
  }
  return scope;
}

/** Whether the parenthesis at `open` is unclosed at the end of `text`. */
function stillOpen(text: string, open: number): boolean {
  let depth = 0;
  let quote = "";
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    if (depth === 0) return false;
  }
  return depth > 0;
}

/**
 * Names that follow relations for the word before `caret`, to be offered
 * with the server's vocabulary (`complete()` keeps those starting with the
 * word): the fields one level down the path being typed, a relation's
 * `<name>.` to go on, back-relations with their list methods, and the
 * path itself when it names a field (so its methods are offered).
 */
export function relationNames(
  all: readonly EntitySchema[],
  entity: string,
  kind: ExprKind,
  text: string,
  caret: number,
): string[] {
  const word = wordBefore(text, caret);
  const own = served(all).find((s) => s.name === entity);
  if (!own || word === "") return [];
  const start: Level = { entities: [own], hops: 0, backs: true };
  const user: Level = {
    entities: served(all).filter((s) => s.type === "auth"),
    hops: 0,
    backs: false,
  };
  const before = text.slice(0, caret - word.length);
  const scope = lambdaScope(all, before, kind, start, user);
  const parts = word.split(".");
  const r = rooted(parts, kind, start, user, scope);
  if (!r) return [];
  // The complete parts of the path; the last one is being typed.
  const done = r.rest.slice(0, -1);
  const out: string[] = [];
  let level = walk(all, r.level, done);
  let prefix = r.prefix + done.map((p) => p + ".").join("");
  if (!level && done.length > 0) {
    // `record.author.name.`: offer the level above, where the name is.
    level = walk(all, r.level, done.slice(0, -1));
    prefix = r.prefix + done.slice(0, -1).map((p) => p + ".").join("");
  }
  if (!level) return [];
  const taken = new Set(scope.keys());
  for (const f of fieldsOf(level)) {
    if (!NAME.test(f.name)) continue;
    out.push(prefix + f.name);
    if (follow(all, level, f.name)) out.push(`${prefix}${f.name}.`);
  }
  if (level.backs) {
    for (const [name, e] of backsOf(all, level)) {
      const v = variable(e.name, taken);
      out.push(
        `${prefix}${name}.length`,
        `${prefix}${name}.some(${v} => ${v}.`,
        `${prefix}${name}.every(${v} => ${v}.`,
      );
    }
  }
  return out;
}
