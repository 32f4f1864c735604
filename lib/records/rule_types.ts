/**
 * The shapes shared by the record service and the rule engine: the request
 * a rule may read, the engine's interface, and what the engine reads of an
 * entity (an `Entity` is one). A leaf module: both sides import it, neither
 * imports the other for it.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Dialect } from "../db/storage.ts";
import type {
  EntitySchema,
  EntityType,
  FieldDef,
  Operation,
} from "../schema/types.ts";
import type { Access } from "./caller_access.ts";
import type { RecordData } from "./codec.ts";

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
  /** When the schema last changed (`schema.updated`, without a copy). */
  readonly updated: string;
  field(name: string): FieldDef | undefined;
}

/** Turns a custom rule (and a list filter) into a caller's `Access`, or throws a denial. */
export interface RuleEngine {
  /** Whether the custom rule `expr` lets `auth` at `record`. */
  allows(
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
    record: RecordData,
  ): boolean;
  /**
   * Whether the custom rule `expr` may let `auth` through at all: it reads
   * the record or the request (decided per record and per request), or it
   * passes for `auth` as it is. Nothing is denied or logged.
   */
  mayPass(expr: string, auth: AuthValue): boolean;
  /** What `auth` may see and write through `op` under the custom rule `expr`. */
  access(
    entity: RuleTarget,
    op: Operation,
    expr: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Access;
  /**
   * The `Access` of the `filter` parameter; `perRow` keeps it out of SQL (a
   * per-row rule is in force: a filter narrowing the rows scanned would make
   * the scan budget an oracle on the hidden rows).
   */
  filter(
    entity: RuleTarget,
    source: string,
    auth: AuthValue,
    req: RuleRequest,
    perRow?: boolean,
  ): Access;
}
