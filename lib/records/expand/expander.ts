/**
 * Runs a planned `expand` for one caller: level by level, one statement per
 * segment and level (per batch of ids), never one per record. Each expanded
 * record passes its own entity's rule for the caller — `get` for a forward
 * relation, `list` (row by row) for a back-relation — compiled to SQL where
 * the rule engine can, else checked per row; a record it hides is absent,
 * and so is everything that would have hung below it. Entities, fields and
 * rules are read as they are now (the plan only checked the names), so a
 * schema changed meanwhile never widens what is shown.
 *
 * Bounds: at most {@link BACK_LIMIT} records per back-relation and parent
 * (oldest first), at most {@link MAX_EXPANDED} records in one answer
 * (counted as they appear: one record under three parents counts three),
 * and under a per-row rule at most {@link MAX_SCAN} rows examined for
 * back-relations; past a bound, a 400 (never a silent cut).
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";
import type { Entity } from "../entity.ts";
import type { Access } from "../caller_access.ts";
import type { RecordData } from "../codec.ts";
import { MAX_SCAN } from "../list.ts";
import { EXPAND_KEY, type ExpandNode, putKey, relationTo } from "./plan.ts";

/** Records of one back-relation under one parent, oldest first. */
export const BACK_LIMIT = 1000;
/** Expanded records in one answer. */
export const MAX_EXPANDED = 10_000;

/** What the expander asks about the caller. */
export interface ExpandScope {
  /** The entity the API serves under `name` now (exact name), if any. */
  entity(name: string): Entity | undefined;
  /**
   * What the caller may see of `entity` through `op`, or undefined when
   * its rule mode refuses the caller outright.
   */
  access(entity: Entity, op: "get" | "list"): Promise<Access | undefined>;
  /** Starts a 400's message (`list records`). */
  action: string;
}

/** The records of one node's parents, and the entity they belong to. */
interface Group {
  entity: Entity;
  records: RecordData[];
  nodes: readonly ExpandNode[];
}

type Expansions = Record<string, unknown>;

/** Counts what one answer holds and examines. */
class Budget {
  /** How many times each expanded record appears in the answer. */
  readonly weight = new Map<RecordData, number>();
  shown = 0;
  scanned = 0;
  readonly #action: string;

  constructor(action: string) {
    this.#action = action;
  }

  /**
   * `child` is shown under `parent` (each appearance of the parent);
   * `nested`: the child's own expansions follow (its weight is kept for
   * them).
   */
  attach(parent: RecordData, child: RecordData, nested: boolean): void {
    const w = this.weight.get(parent) ?? 1;
    if (nested) this.weight.set(child, (this.weight.get(child) ?? 0) + w);
    this.shown += w;
    if (this.shown > MAX_EXPANDED) this.overflow();
  }

  /** The answer would hold more than {@link MAX_EXPANDED} records. */
  overflow(): never {
    throw new MoonbaseError(
      "invalid",
      `Cannot ${this.#action}: expand would return more than ${MAX_EXPANDED} records; ask for fewer (a smaller limit, fewer or shorter paths)`,
    );
  }

  /** Rows read for a back-relation under a per-row rule. */
  scan(n: number, what: string): void {
    this.scanned += n;
    if (this.scanned > MAX_SCAN) {
      throw new MoonbaseError(
        "invalid",
        `Cannot ${this.#action}: the list rule of ${what} is checked row by row (not compiled to SQL) and more than ${MAX_SCAN} rows would need checking; expand fewer records, or write a rule that compiles to SQL`,
      );
    }
  }
}

/**
 * The records with their expansions (new objects under `expand`; the
 * records given are not changed). `root` is the entity of `records`.
 */
export async function expandRecords(
  scope: ExpandScope,
  root: Entity,
  records: readonly RecordData[],
  plan: readonly ExpandNode[],
): Promise<RecordData[]> {
  if (plan.length === 0) return [...records];
  const tops = records.map((r) => ({ ...r, [EXPAND_KEY]: {} }));
  const budget = new Budget(scope.action);
  let level: Group[] = [{ entity: root, records: tops, nodes: plan }];
  while (level.length > 0) {
    const next: Group[] = [];
    for (const group of level) {
      for (const node of group.nodes) {
        const got = node.kind === "forward"
          ? await forward(scope, group, node, budget)
          : await backward(scope, group, node, budget);
        if (got && node.children.length > 0 && got.records.length > 0) {
          next.push({ ...got, nodes: node.children });
        }
      }
    }
    level = next;
  }
  return tops;
}

function expansions(record: RecordData): Expansions {
  return record[EXPAND_KEY] as Expansions;
}

/** A fetched record, ready to hold expansions of its own. */
function fresh(record: RecordData, nested: boolean): RecordData {
  if (nested) record[EXPAND_KEY] = {};
  return record;
}

/** Whether `field` of `from` is (still) a relation to `to`. */
function pointsAt(from: Entity, field: string, to: Entity): boolean {
  return relationTo(from, field, to.name);
}

async function visible(
  records: RecordData[],
  keep: Access["keep"],
): Promise<RecordData[]> {
  if (!keep) return records;
  const out: RecordData[] = [];
  for (const r of records) if (await keep(r)) out.push(r);
  return out;
}

/** `<field>`: the record each parent's relation points at, if the caller may `get` it. */
async function forward(
  scope: ExpandScope,
  group: Group,
  node: ExpandNode,
  budget: Budget,
): Promise<Omit<Group, "nodes"> | undefined> {
  if (!node.served) return undefined;
  const into = scope.entity(node.entity);
  if (!into || into.type === "view") return undefined;
  if (!pointsAt(group.entity, node.field, into)) return undefined;
  const access = await scope.access(into, "get");
  if (!access) return undefined;
  const ids = new Set<string>();
  for (const r of group.records) {
    for (const id of idsOf(r[node.field])) ids.add(id);
  }
  const found = ids.size === 0 ? [] : await visible(
    await into.records.byIds([...ids], access.where),
    access.keep,
  );
  const byId = new Map<string, RecordData>();
  const nested = node.children.length > 0;
  for (const r of found) byId.set(String(r.id), fresh(r, nested));
  for (const parent of group.records) {
    const value = parent[node.field];
    if (Array.isArray(value)) {
      const list: RecordData[] = [];
      for (const id of idsOf(value)) {
        const rec = byId.get(id);
        if (rec) {
          budget.attach(parent, rec, nested);
          list.push(rec);
        }
      }
      putKey(expansions(parent), node.key, list);
    } else if (typeof value === "string" && byId.has(value)) {
      const rec = byId.get(value)!;
      budget.attach(parent, rec, nested);
      putKey(expansions(parent), node.key, rec);
    }
  }
  return { entity: into, records: [...byId.values()] };
}

function idsOf(value: unknown): string[] {
  if (typeof value === "string") return value === "" ? [] : [value];
  if (Array.isArray(value)) {
    return value.filter((v): v is string => typeof v === "string" && v !== "");
  }
  return [];
}

/**
 * `<entity>_via_<field>`: the records of `entity` whose `field` points at
 * each parent, those the caller's `list` rule shows, oldest first.
 */
async function backward(
  scope: ExpandScope,
  group: Group,
  node: ExpandNode,
  budget: Budget,
): Promise<Omit<Group, "nodes"> | undefined> {
  if (!node.served) return undefined;
  const from = scope.entity(node.entity);
  if (!from || from.type === "view") return undefined;
  if (!pointsAt(from, node.field, group.entity)) return undefined;
  const access = await scope.access(from, "list");
  if (!access) return undefined;
  const ids = [...new Set(group.records.map((r) => String(r.id)))];
  // Under a per-row rule SQL cannot count the visible rows per parent: read
  // them all (within the scan budget) and cap after the check.
  const room = MAX_EXPANDED - budget.shown;
  const perRow = access.keep !== undefined;
  const rows = await from.records.referencing(
    node.field,
    ids,
    access.where,
    perRow
      ? { per: 0, max: MAX_SCAN - budget.scanned }
      : { per: BACK_LIMIT, max: room },
  );
  if (perRow) budget.scan(rows.length, from.name);
  else if (rows.length > room) budget.overflow(); // one more than fits
  // A record of a multiple relation comes once per parent its list holds:
  // one object (checked once) shown under each.
  const one = new Map<string, RecordData>();
  for (const { record } of rows) {
    const id = String(record.id);
    if (!one.has(id)) one.set(id, record);
  }
  const shown = new Set(await visible([...one.values()], access.keep));
  const byParent = new Map<string, RecordData[]>();
  const nested = node.children.length > 0;
  for (const { parent, record } of rows) {
    const r = one.get(String(record.id))!;
    if (!shown.has(r)) continue;
    let list = byParent.get(parent);
    if (!list) byParent.set(parent, list = []);
    if (list.length < BACK_LIMIT) list.push(r);
  }
  const records = new Set<RecordData>();
  for (const list of byParent.values()) {
    for (const r of list) records.add(fresh(r, nested));
  }
  for (const parent of group.records) {
    const list = byParent.get(String(parent.id)) ?? [];
    for (const r of list) budget.attach(parent, r, nested);
    putKey(expansions(parent), node.key, list);
  }
  return { entity: from, records: [...records] };
}
