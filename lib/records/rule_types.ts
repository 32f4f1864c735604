/**
 * The shapes shared by the record service and the rule engine: the request
 * a rule may read, the engine's interface, and what the engine reads of an
 * entity (an `Entity` is one). A leaf module: both sides import it, neither
 * imports the other for it.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Dialect, Queryable } from "../db/storage.ts";
import type {
  EntitySchema,
  EntityType,
  FieldDef,
  Operation,
} from "../schema/types.ts";
import type { Access } from "./caller_access.ts";
import type { SortVia } from "./list_query.ts";

export type { SortVia } from "./list_query.ts";
import type { RecordData } from "./codec.ts";
import type { Expr } from "../rules/ast.ts";
import type { Related } from "../rules/evaluate.ts";

/** What of the HTTP request a rule may read (`req.*`). */
export interface RuleRequest {
  body: Record<string, unknown>;
  query: Record<string, string>;
  method: string;
}

/** What the rule engine reads of an entity. */
export interface RuleTarget {
  readonly id: string;
  readonly name: string;
  readonly type: EntityType;
  readonly dialect: Dialect;
  readonly fields: FieldDef[];
  readonly schema: EntitySchema;
  /** The schema shared, never copied (hot paths; do not change it). */
  readonly shape: Readonly<EntitySchema>;
  /** When the schema last changed (`schema.updated`, without a copy). */
  readonly updated: string;
  field(name: string): FieldDef | undefined;
  /**
   * Another entity by name (any case), as the registry holds it now: rules
   * and filters read related records through it.
   */
  lookup(name: string): RuleTarget | undefined;
  /** Where its records are read now (inside a before-hook or batch: that write). */
  readonly reads: Queryable;
}

/**
 * What a caller may read of a related entity: its filters read related
 * records only as the caller could read them itself (the record service
 * decides; a rule reads them whatever their own rules say).
 */
export interface CallerView {
  /**
   * How the caller's rule on `entity` for `op` decides: every record,
   * none (the rule mode refuses the caller, or the API does not serve the
   * entity), or the custom rule `expr`.
   */
  decide(
    entity: RuleTarget,
    op: "get" | "list",
  ): { kind: "all" } | { kind: "none" } | { kind: "rule"; expr: string };
  /** What the caller may see of `entity` through `op` (undefined: nothing). */
  access(entity: RuleTarget, op: "get" | "list"): Promise<Access | undefined>;
  /** The request the related entity's rules read (as a GET of its records would). */
  readonly req: RuleRequest;
}

/**
 * The related records one set of decisions read, shared by them
 * (`rule_shared_reads.ts` `SharedRelations`): a realtime event's, for its
 * subscribers; an API description's, for its operations.
 */
export interface SharedReads extends Related {
  /** `make()` once per `key` while it lives (a rule bound for a kind of caller). */
  bound(key: string, make: () => Expr): Expr;
  /** Reads what `expr` (rule `key`) reads through relations from `record` of `entity`. */
  record(
    key: string,
    expr: Expr,
    entity: RuleTarget,
    record: RecordData,
  ): Promise<void>;
  /**
   * Reads what `expr` (rule `key`) reads through relations from the
   * caller's record `user` of the auth entity `entity`.
   */
  user(
    key: string,
    expr: Expr,
    entity: RuleTarget,
    user: RecordData,
  ): Promise<void>;
}

/** Turns a custom rule (and a list filter) into a caller's `Access`, or throws a denial. */
export interface RuleEngine {
  /**
   * Whether the custom rule `expr` of `entity` lets `auth` at `record`,
   * decided in JavaScript (realtime events): now, or, for a rule reading
   * through relations, once `reads` (the event's, shared by its
   * subscribers) read the related records; without `reads` such a rule
   * denies. The promise rejects when the database does not answer.
   */
  allows(
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
    record: RecordData,
    entity?: RuleTarget,
    reads?: SharedReads,
  ): boolean | Promise<boolean>;
  /**
   * Whether the custom rule `expr` may let `auth` through at all: it reads
   * the record or the request (decided per record and per request), or it
   * passes for `auth` as it is. A rule reading through the caller's
   * relations only (`auth.user.team.active`) is evaluated once `reads` read
   * them (given `entity`, the rule's); without `reads` it may pass. Nothing
   * is denied.
   */
  mayPass(
    expr: string,
    auth: AuthValue,
    entity?: RuleTarget,
    reads?: SharedReads,
  ): boolean | Promise<boolean>;
  /** What `auth` may see and write through `op` under the custom rule `expr`. */
  access(
    entity: RuleTarget,
    op: Operation,
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access>;
  /**
   * The `Access` of the `filter` parameter; `perRow` keeps it out of SQL (a
   * per-row rule is in force: a filter narrowing the rows scanned would make
   * the scan budget an oracle on the hidden rows); `view`: what the caller
   * may read of related entities (none: every record, as an admin).
   */
  filter(
    entity: RuleTarget,
    source: string,
    auth: AuthValue,
    req: RuleRequest,
    perRow?: boolean,
    view?: CallerView,
  ): Promise<Access>;
  /**
   * The value of `path` (`["author", "name"]`) through relations of
   * `entity`, for a sort (400 when it names no readable field, or when a
   * related entity's rule for the caller has no SQL).
   */
  sortVia(
    entity: RuleTarget,
    path: readonly string[],
    auth: AuthValue,
    req: RuleRequest,
    view?: CallerView,
  ): SortVia;
}
