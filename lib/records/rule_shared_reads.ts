/**
 * The related records one set of decisions reads, read once and shared:
 * a realtime event's, by every subscriber it is decided for; an API
 * description's, by its operations. `SharedRelations` holds one
 * `RelationLoader` (`rule_relations.ts`) for them all and batches the
 * callers' `auth.user` reads asked in one turn; `oneAtATime` is the gate the
 * realtime hub runs those reads through.
 *
 * @module
 */

import type { Expr, RelationNode } from "../rules/ast.ts";
import type { RecordData } from "./codec.ts";
import { RelationLoader } from "./rule_relations.ts";
import type { RuleTarget, SharedReads } from "./rule_types.ts";

/** Runs a read (when the reads before it are done: `oneAtATime`). */
export type ReadGate = <T>(read: () => Promise<T>) => Promise<T>;

/**
 * A gate running its reads one at a time, in the order asked (a read that
 * fails does not stop the next).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { oneAtATime } from "moonbase/lib/records/rule_shared_reads.ts";
 * const gate = oneAtATime();
 * const order: number[] = [];
 * await Promise.all([
 *   gate(async () => { await new Promise((r) => setTimeout(r, 5)); order.push(1); }),
 *   gate(async () => { order.push(2); }),
 * ]);
 * assert.deepEqual(order, [1, 2]);
 * ```
 */
export function oneAtATime(): ReadGate {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(read: () => Promise<T>): Promise<T> => {
    const p = last.then(read);
    last = p.catch(() => {});
    return p;
  };
}

/**
 * The related records one set of decisions read, shared by them. Realtime:
 * one event's, shared by every subscriber it is decided for
 * (`RuleEngine.allows` with `reads`); the API description: one document's,
 * shared by its operations (`RuleEngine.mayPass`). What the
 * event's record reads through relations is read once per rule, and the
 * callers' `auth.user` relations asked in the same turn (the hub decides
 * every subscriber of an event in one turn) are read together, one
 * statement per relation and level for all of them. Made per event and
 * dropped after it: the next event reads the related records anew (a
 * project that changed owner decides the next task's event). `gate` runs
 * the reads one at a time (the hub's: one event's reads at a time).
 */
export class SharedRelations implements SharedReads {
  readonly #gate: ReadGate;
  #loader: RelationLoader | undefined;
  /** Reads from a record, by record and rule (its source text). */
  readonly #records = new WeakMap<object, Map<string, Promise<void>>>();
  /** Reads from a caller's record, by record and rule. */
  readonly #users = new WeakMap<object, Map<string, Promise<void>>>();
  /** Callers' reads asked this turn, by rule and auth entity. */
  #queued = new Map<
    string,
    {
      expr: Expr;
      entity: RuleTarget;
      users: RecordData[];
      done: PromiseWithResolvers<void>;
    }
  >();
  /** Bound rules, by key (see `bound`). */
  readonly #bound = new Map<string, Expr>();

  constructor(gate: ReadGate = (read) => read()) {
    this.#gate = gate;
  }

  /** What relation `node` of `parent` holds (see `Related`). */
  get(parent: object, node: RelationNode): unknown {
    return this.#loader?.get(parent, node);
  }

  /** `make()` once per `key` for this event (a rule bound for a kind of caller). */
  bound(key: string, make: () => Expr): Expr {
    let e = this.#bound.get(key);
    if (!e) this.#bound.set(key, e = make());
    return e;
  }

  #loaderOf(entity: RuleTarget): RelationLoader {
    return this.#loader ??= new RelationLoader(entity.reads);
  }

  /** Reads what `expr` (rule `key`) reads through relations from `record` of `entity`. */
  record(
    key: string,
    expr: Expr,
    entity: RuleTarget,
    record: RecordData,
  ): Promise<void> {
    let m = this.#records.get(record);
    if (!m) this.#records.set(record, m = new Map());
    let p = m.get(key);
    if (!p) {
      const loader = this.#loaderOf(entity);
      p = this.#gate(() => loader.load(expr, "record", entity, [record]));
      m.set(key, p);
    }
    return p;
  }

  /**
   * Reads what `expr` (rule `key`) reads through relations from the
   * caller's record `user` of the auth entity `entity`, with the other
   * callers' asked in this turn.
   */
  user(
    key: string,
    expr: Expr,
    entity: RuleTarget,
    user: RecordData,
  ): Promise<void> {
    let m = this.#users.get(user);
    if (!m) this.#users.set(user, m = new Map());
    let p = m.get(key);
    if (p) return p;
    const group = `${key}\0${entity.name.toLowerCase()}`;
    let q = this.#queued.get(group);
    if (!q) {
      if (this.#queued.size === 0) queueMicrotask(() => this.#flush());
      q = { expr, entity, users: [], done: Promise.withResolvers<void>() };
      this.#queued.set(group, q);
    }
    q.users.push(user);
    p = q.done.promise;
    m.set(key, p);
    return p;
  }

  #flush(): void {
    const batch = [...this.#queued.values()];
    this.#queued = new Map();
    for (const q of batch) {
      const loader = this.#loaderOf(q.entity);
      this.#gate(() => loader.load(q.expr, "user", q.entity, q.users)).then(
        q.done.resolve,
        q.done.reject,
      );
    }
  }
}
