/**
 * Record operations as a caller performs them: the entity's access rule
 * first, then the operation. Custom expressions are decided by `RuleEngine`.
 *
 * `RecordService` is the one object the records routes, batches, `{ as }`
 * (`as_caller.ts`), the API description (`opens`) and realtime (`sees`,
 * `expandEvent`) call. Its parts: the served entities and a caller's
 * access to them (`served_access.ts`), reads (`record_reads.ts`), writes
 * (`record_writes.ts`), the shape of an answer (`answer_shape.ts`); here
 * the decisions made without a request (`opens`, `sees`).
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { Registry } from "./registry.ts";
import type { Operation } from "../schema/types.ts";
import { authorize, isExposed } from "./access.ts";
import type { RuleEngine, RuleRequest, SharedReads } from "./rule_types.ts";
import type { AccountChecks } from "./write_checks.ts";
import type { RequestOrigin } from "../http/request_scope.ts";
import type { RecordData } from "./codec.ts";
import type { ListResult } from "./list.ts";
import type { AggregateResult } from "./aggregate.ts";
import type { CursorKey } from "./list_cursor.ts";
import type { ExpandNode } from "./expand/plan.ts";
import { expandRecords } from "./expand/expander.ts";
import {
  oneAtATime,
  type ReadGate,
  SharedRelations,
} from "./rule_shared_reads.ts";
import { ServedAccess } from "./served_access.ts";
import { RecordReads } from "./record_reads.ts";
import {
  type Admission,
  type PreparedWrite,
  type RecordWrite,
  RecordWrites,
  type WriteCall,
} from "./record_writes.ts";
import {
  type AnswerShape,
  answerShape,
  expandScope,
  present,
} from "./answer_shape.ts";

export type { AnswerShape } from "./answer_shape.ts";
export type {
  Admission,
  PreparedWrite,
  RecordWrite,
  WriteCall,
} from "./record_writes.ts";

/** Rule-checked record operations. */
export class RecordService {
  #registry: Registry;
  #rules: RuleEngine;
  #served: ServedAccess;
  #reads: RecordReads;
  #writes: RecordWrites;

  /**
   * Builds the service; `cursorKey` seals list cursors, `checks` are the
   * account rules every create and update runs (sign-up throttle,
   * `oldPassword`).
   */
  constructor(
    registry: Registry,
    rules: RuleEngine,
    cursorKey: CursorKey,
    checks: AccountChecks,
  ) {
    this.#registry = registry;
    this.#rules = rules;
    this.#served = new ServedAccess(registry, rules);
    this.#reads = new RecordReads(this.#served, cursorKey);
    this.#writes = new RecordWrites(this.#served, checks);
  }

  /** The entity behind a records route; 404 when missing or without API. */
  entity(name: string): Entity {
    return this.#served.entity(name);
  }

  /**
   * The entities the records API serves now (exposed, and no view the
   * view rule refuses), system ones excluded.
   */
  served(): Entity[] {
    return this.#registry.all().filter((e) =>
      isExposed(e, e.name) && this.#registry.viewRefusal(e.id) === undefined
    );
  }

  /**
   * Whether `op` on `entity` may be open to `auth` at all, before any
   * record or body: the rule mode lets the caller through, or its custom
   * rule reads the record or the request (decided per call) or passes for
   * the caller as it is (its `auth.user` relations read through `reads`,
   * shared by the decisions of one description; without it such a rule may
   * pass). Writes to views never are. The API description (lib/openapi)
   * shows a caller the routes this opens.
   */
  opens(
    entity: Entity,
    op: Operation,
    auth: AuthValue,
    reads?: SharedReads,
  ): boolean | Promise<boolean> {
    if (entity.type === "view" && op !== "list" && op !== "get") return false;
    let d;
    try {
      d = authorize(entity, op, auth);
    } catch {
      return false; // the rule mode refuses this caller
    }
    return d.kind === "allow" ||
      this.#rules.mayPass(d.expr, auth, entity, reads);
  }

  /** Lists records the caller may see (`RecordReads.list`). */
  list(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<ListResult> {
    return this.#reads.list(entity, query, auth, req);
  }

  /** Aggregates the records the caller may list (`RecordReads.aggregate`). */
  aggregate(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<AggregateResult> {
    return this.#reads.aggregate(entity, query, auth, req);
  }

  /**
   * Whether `auth` may see `record` of `entity` through `op` now, by the
   * entity's current rule (realtime events: the record is the event's, not
   * read again). An entity the API no longer serves shows nothing. A rule
   * reading through relations answers once `reads` (the event's, shared by
   * its subscribers) read the related records as they are now; the promise
   * rejects when the database does not answer.
   */
  sees(
    name: string,
    entityId: string,
    op: "list" | "get",
    auth: AuthValue,
    record: RecordData,
    reads?: SharedReads,
  ): boolean | Promise<boolean> {
    const entity = this.#registry.byName(name);
    // The name may belong to another entity now (deleted, renamed).
    if (!isExposed(entity, name) || entity.id !== entityId) return false;
    if (entity.type === "view") return false;
    let d;
    try {
      d = authorize(entity, op, auth);
    } catch {
      return false; // the rule mode denies this caller: the event is not shown
    }
    return d.kind === "allow" ||
      this.#rules.allows(d.expr, auth, EVENT_REQUEST, record, entity, reads);
  }

  /**
   * The related records one set of decisions shares (a realtime event's,
   * see `sees`; an API description's, see `opens`); `gate` runs its reads
   * (default: one at a time).
   */
  sharedReads(gate: ReadGate = oneAtATime()): SharedReads {
    return new SharedRelations(gate);
  }

  /** Reads a record the caller may see (`RecordReads.get`). */
  get(
    entity: Entity,
    id: string,
    auth: AuthValue,
    req: RuleRequest,
    query?: URLSearchParams,
  ): Promise<RecordData> {
    return this.#reads.get(entity, id, auth, req, query);
  }

  /**
   * The shape `query`'s `expand` and `fields` ask of `entity`'s records
   * (undefined: as stored), or a 400 naming what is unknown; `action`
   * starts the message (`list records`). Check it before a write: a write
   * must not happen when its answer cannot be given.
   */
  answerShape(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    action: string,
  ): AnswerShape | undefined {
    return answerShape(this.#served, entity, query, auth, action);
  }

  /** Records of `entity` as `shape` shows them to `auth` (`answer_shape.ts`). */
  present(
    entity: Entity,
    records: readonly RecordData[],
    shape: AnswerShape,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<RecordData[]> {
    return present(this.#served, entity, records, shape, auth, req);
  }

  /**
   * An event's record with the expansions `plan` asks, as `auth` may see
   * them now (realtime subscriptions with `?expand=`); the record itself
   * was decided by `sees`.
   */
  async expandEvent(
    name: string,
    entityId: string,
    record: RecordData,
    plan: readonly ExpandNode[],
    auth: AuthValue,
  ): Promise<RecordData> {
    const entity = this.#registry.get(entityId);
    if (!entity || entity.name !== name || plan.length === 0) return record;
    const scope = expandScope(
      this.#served,
      auth,
      EVENT_REQUEST,
      "expand event",
    );
    return (await expandRecords(scope, entity, [record], plan))[0];
  }

  /** Refuses early when the rule mode alone denies (`RecordWrites.precheck`). */
  precheck(entity: Entity, op: Operation, auth: AuthValue): void {
    this.#writes.precheck(entity, op, auth);
  }

  /** Counts a sign-up before the body is read (`RecordWrites.admit`). */
  admit(
    entity: Entity,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<Admission> {
    return this.#writes.admit(entity, auth, origin);
  }

  /** What a batch's write checks before its transaction (`RecordWrites.prepare`). */
  prepare(
    entity: Entity,
    op: "create" | "update" | "upsert",
    id: string | undefined,
    body: Record<string, unknown>,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<PreparedWrite> {
    return this.#writes.prepare(entity, op, id, body, auth, origin);
  }

  /**
   * Resolves once the schemas in memory are as new as the stored ones
   * (PostgreSQL, `Registry.current`): a batch checks once, before its
   * transaction.
   */
  async fresh(): Promise<void> {
    await this.#registry.current();
  }

  /** Creates a record (`RecordWrites.create`). */
  create(
    entity: Entity,
    write: RecordWrite,
    auth: AuthValue,
    req: RuleRequest,
    call: WriteCall = {},
  ): Promise<RecordData> {
    return this.#writes.create(entity, write, auth, req, call);
  }

  /** Updates a record the caller may change (`RecordWrites.update`). */
  update(
    entity: Entity,
    id: string,
    write: RecordWrite,
    auth: AuthValue,
    req: RuleRequest,
    call: WriteCall = {},
  ): Promise<RecordData> {
    return this.#writes.update(entity, id, write, auth, req, call);
  }

  /** Deletes a record the caller may delete (`RecordWrites.remove`). */
  remove(
    entity: Entity,
    id: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<RecordData> {
    return this.#writes.remove(entity, id, auth, req);
  }
}

/** What `req.*` holds for a rule deciding a realtime event. */
const EVENT_REQUEST: RuleRequest = Object.freeze({
  body: Object.freeze({}),
  query: Object.freeze({}),
  method: "GET",
}) as RuleRequest;
