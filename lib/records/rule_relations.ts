/**
 * The records a rule or filter reads through relations, loaded before it is
 * evaluated in JavaScript (the evaluator never waits: `Related`): level by
 * level along the expression's relation paths (`relationPaths`), one
 * statement per relation and level (per batch of ids: `expand/fetch.ts`, the
 * one home of the relation SQL), never one per record. A rule reads related
 * records whatever their own rules say (it is the admin's statement); a
 * caller's filter only those its own rules show it (`view`: `get` for a
 * relation, `list` for a back-relation), so a filter cannot probe a record
 * the caller cannot read.
 *
 * Bounds: at most {@link BACK_READ} records of one back-relation under one
 * record; a longer list is not read, and a rule reading it denies (its SQL
 * form, when it has one, counts them all). Under a per-row `list` rule (a
 * filter's view) the rows are read before the check, at most
 * `BACK_READ + 1` per record: past that, the list is not read either —
 * never a list silently missing records the caller may read, because
 * records it may not read came first.
 *
 * @module
 */

import type { Queryable, Row } from "../db/storage.ts";
import type { Expr, RelationNode } from "../rules/ast.ts";
import { ABSENT, type Related, RuleEvalError } from "../rules/evaluate.ts";
import { relationPaths } from "../rules/relation_paths.ts";
import { decodeRow, type RecordData } from "./codec.ts";
import type { Access } from "./caller_access.ts";
import { PARENT_COLUMN, rowsByIds, rowsReferencing } from "./expand/fetch.ts";
import type { RuleTarget } from "./rule_types.ts";

/** Records of one back-relation read under one record, at most. */
export const BACK_READ = 1000;

/**
 * What a caller may read of an entity through `op` (undefined: nothing);
 * absent: everything (a rule).
 */
export type RelationView = (
  entity: RuleTarget,
  op: "get" | "list",
) => Promise<Access | undefined>;

/** One level of relation paths: key → what hangs below it. */
interface Plan {
  readonly node: RelationNode;
  readonly next: Map<string, Plan>;
}

/** The relation paths of `expr` from a root, as a tree. */
function planOf(expr: Expr, root: "record" | "user"): Map<string, Plan> {
  const top = new Map<string, Plan>();
  for (const p of relationPaths(expr)) {
    if (p.root !== root) continue;
    let level = top;
    for (const node of p.path) {
      let at = level.get(node.key);
      if (!at) level.set(node.key, at = { node, next: new Map() });
      level = at.next;
    }
  }
  return top;
}

/**
 * Whether `expr` reads relations from `root` (`record`: the record,
 * `user`: `auth.user`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readsRelations } from "moonbase/lib/records/rule_relations.ts";
 * assert.equal(readsRelations({ type: "literal", pos: 0, value: 1 }, "record"), false);
 * ```
 */
export function readsRelations(expr: Expr, root: "record" | "user"): boolean {
  return planOf(expr, root).size > 0;
}

/** The related records of one request, loaded ahead of the evaluator. */
export class RelationLoader implements Related {
  readonly #db: Queryable;
  readonly #view: RelationView | undefined;
  /** What each record's relations hold, by key. */
  readonly #held = new WeakMap<object, Map<string, unknown>>();
  /** Records read by id, per entity (lowercase name): one read per id. */
  readonly #byId = new Map<string, Map<string, RecordData | typeof ABSENT>>();
  /** Back-relations over the bound, by record and key. */
  readonly #cut = new WeakMap<object, Set<string>>();

  /** `db`: where to read (a write's transaction inside one); `view`: a caller's filter. */
  constructor(db: Queryable, view?: RelationView) {
    this.#db = db;
    this.#view = view;
  }

  /** What relation `node` of `parent` holds (see `Related`). */
  get(parent: object, node: RelationNode): unknown {
    if (this.#cut.get(parent)?.has(node.key)) {
      throw new RuleEvalError(
        `${node.key} holds more than ${BACK_READ} records (read them in SQL)`,
      );
    }
    return this.#held.get(parent)?.get(node.key);
  }

  /**
   * Loads what `expr` reads through relations from `records` of `entity`
   * (`root: "record"`) or from the caller's record (`root: "user"`).
   */
  async load(
    expr: Expr,
    root: "record" | "user",
    entity: RuleTarget,
    records: readonly RecordData[],
  ): Promise<void> {
    const plan = planOf(expr, root);
    if (plan.size === 0 || records.length === 0) return;
    let level: {
      entity: RuleTarget;
      records: RecordData[];
      plan: Map<string, Plan>;
    }[] = [
      { entity, records: [...records], plan },
    ];
    while (level.length > 0) {
      const next: typeof level = [];
      for (const group of level) {
        for (const p of group.plan.values()) {
          const got = await this.#step(group.entity, group.records, p.node);
          if (got && p.next.size > 0 && got.records.length > 0) {
            next.push({ ...got, plan: p.next });
          }
        }
      }
      level = next;
    }
  }

  #hold(parent: object, key: string, value: unknown): void {
    let m = this.#held.get(parent);
    if (!m) this.#held.set(parent, m = new Map());
    m.set(key, value);
  }

  /** One relation of every parent; the records read, to go on from. */
  async #step(
    from: RuleTarget,
    parents: readonly RecordData[],
    node: RelationNode,
  ): Promise<{ entity: RuleTarget; records: RecordData[] } | undefined> {
    const into = from.lookup(node.entity);
    if (!into || into.type === "view") {
      // Gone since the expression was bound: reads as no record.
      for (const p of parents) {
        this.#hold(p, node.key, node.kind === "forward" ? ABSENT : []);
      }
      return undefined;
    }
    const access = this.#view
      ? await this.#view(into, node.kind === "back" ? "list" : "get")
      : {};
    return node.kind === "forward"
      ? await this.#forward(into, parents, node, access)
      : node.kind === "many"
      ? await this.#many(into, parents, node, access)
      : await this.#back(into, parents, node, access);
  }

  /** Records `into` by id (those `access` shows), read once per id. */
  async #byIds(
    into: RuleTarget,
    ids: Iterable<string>,
    access: Access | undefined,
  ): Promise<Map<string, RecordData | typeof ABSENT>> {
    const known = this.#known(into);
    const wanted = new Set<string>();
    for (const id of ids) if (!known.has(id)) wanted.add(id);
    if (wanted.size > 0) {
      const found = access
        ? await this.#read(
          into,
          await rowsByIds(this.#db, into.shape, [...wanted], access.where),
          access,
        )
        : [];
      for (const r of found) known.set(String(r.id), r);
      for (const id of wanted) if (!known.has(id)) known.set(id, ABSENT);
    }
    return known;
  }

  /**
   * A multiple relation of every parent: the records its ids point at (in
   * the list's order; ids of no record, or of one `access` hides, left out).
   */
  async #many(
    into: RuleTarget,
    parents: readonly RecordData[],
    node: RelationNode,
    access: Access | undefined,
  ): Promise<{ entity: RuleTarget; records: RecordData[] }> {
    const idsOf = (p: RecordData): string[] => {
      const v = p[node.field];
      return Array.isArray(v)
        ? v.filter((id): id is string => typeof id === "string" && id !== "")
        : [];
    };
    const known = await this.#byIds(into, parents.flatMap(idsOf), access);
    const out = new Set<RecordData>();
    for (const p of parents) {
      const list: RecordData[] = [];
      for (const id of idsOf(p)) {
        const rec = known.get(id);
        if (rec !== undefined && rec !== ABSENT) list.push(rec as RecordData);
      }
      this.#hold(p, node.key, list);
      for (const r of list) out.add(r);
    }
    return { entity: into, records: [...out] };
  }

  async #forward(
    into: RuleTarget,
    parents: readonly RecordData[],
    node: RelationNode,
    access: Access | undefined,
  ): Promise<{ entity: RuleTarget; records: RecordData[] }> {
    const ids: string[] = [];
    for (const p of parents) {
      const id = p[node.field];
      if (typeof id === "string" && id !== "") ids.push(id);
    }
    const known = await this.#byIds(into, ids, access);
    const out = new Set<RecordData>();
    for (const p of parents) {
      const id = p[node.field];
      const rec = typeof id === "string" ? known.get(id) ?? ABSENT : ABSENT;
      this.#hold(p, node.key, rec);
      if (rec !== ABSENT) out.add(rec as RecordData);
    }
    return { entity: into, records: [...out] };
  }

  async #back(
    from: RuleTarget,
    parents: readonly RecordData[],
    node: RelationNode,
    access: Access | undefined,
  ): Promise<{ entity: RuleTarget; records: RecordData[] }> {
    const ids = [...new Set(parents.map((p) => String(p.id)))];
    const byParent = new Map<string, RecordData[]>();
    const field = from.field(node.field);
    /** Rows read past the bound before the per-row check: no list is whole. */
    let truncated = false;
    if (access && field && ids.length > 0) {
      // One more than the bound per record: a list cut short is known.
      const max = (BACK_READ + 1) * ids.length;
      const rows = await rowsReferencing(
        this.#db,
        from.dialect,
        from.shape,
        field,
        ids,
        access.where,
        access.keep ? { per: 0, max } : { per: BACK_READ + 1, max },
      );
      // Under a per-row rule SQL reads the rows before the check: past the
      // bound, rows the check would hide took the room of those it shows.
      truncated = access.keep !== undefined && rows.length > max;
      for (const row of rows) {
        const r = decodeRow(from.shape, row, from.dialect);
        if (access.keep && !(await access.keep(r, this.#db))) continue;
        // A record of a multiple relation comes once per parent it names.
        const key = String(row[PARENT_COLUMN]);
        let list = byParent.get(key);
        if (!list) byParent.set(key, list = []);
        list.push(r);
      }
    }
    const out: RecordData[] = [];
    for (const p of parents) {
      const list = byParent.get(String(p.id)) ?? [];
      if (truncated || list.length > BACK_READ) {
        let cut = this.#cut.get(p);
        if (!cut) this.#cut.set(p, cut = new Set());
        cut.add(node.key);
      }
      this.#hold(p, node.key, list);
      out.push(...list);
    }
    return { entity: from, records: out };
  }

  /** Stored rows as records, those `access.keep` lets through. */
  async #read(
    entity: RuleTarget,
    rows: readonly Record<string, unknown>[],
    access: Access,
  ): Promise<RecordData[]> {
    const out: RecordData[] = [];
    for (const row of rows) {
      const r = decodeRow(entity.shape, row as Row, entity.dialect);
      if (!access.keep || await access.keep(r, this.#db)) out.push(r);
    }
    return out;
  }

  #known(entity: RuleTarget): Map<string, RecordData | typeof ABSENT> {
    const key = entity.name.toLowerCase();
    let m = this.#byId.get(key);
    if (!m) this.#byId.set(key, m = new Map());
    return m;
  }
}
