/**
 * Record operations as a caller performs them: the entity's access rule
 * first, then the operation. Custom expressions are decided by `RuleEngine`.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { Registry } from "./registry.ts";
import type { Operation } from "../schema/types.ts";
import {
  assertServed,
  assertWritable,
  authorize,
  isExposed,
} from "./access.ts";
import type {
  CallerView,
  RuleEngine,
  RuleRequest,
  SharedReads,
  SortVia,
} from "./rule_types.ts";
import type { AccountChecks } from "./write_checks.ts";
import type { RequestOrigin } from "../http/request_scope.ts";

import type { RecordData } from "./codec.ts";
import type { ListResult } from "./list.ts";
import type { AggregateResult } from "./aggregate.ts";
import { type Access, both } from "./caller_access.ts";
import { callerOf, type CursorKey } from "./list_cursor.ts";
import { sortUnderPerRowRule, writable } from "./caller_limits.ts";
import type { PasswordHashes } from "./entity_records.ts";
import { parseExpand } from "./expand/paths.ts";
import { canUseAs, type ExpandNode, planExpand } from "./expand/plan.ts";
import {
  type FieldNames,
  parseFields,
  project,
  type Projection,
} from "./expand/fields.ts";
import { expandRecords, type ExpandScope } from "./expand/expander.ts";
import {
  oneAtATime,
  type ReadGate,
  SharedRelations,
} from "./rule_shared_reads.ts";

/** The body of a write: values, uploaded files, and how to undo the uploads. */
export interface RecordWrite {
  body: Record<string, unknown>;
  uploads: ReadonlyMap<string, readonly string[]>;
  cleanup(): Promise<void>;
}

/**
 * A sign-up counted before its body was read (`RecordService.admit`), with
 * the `X-RateLimit-*` headers for the answer.
 */
export interface Admission {
  readonly headers: Record<string, string> | undefined;
}

/**
 * How a write is called: the request it comes from, and what was done for
 * it ahead of its transaction (`RecordService.prepare`: a batch does it
 * before it opens its own, which must neither wait for these checks nor
 * roll back what they count).
 */
export interface WriteCall {
  /** The request (the client address the account checks count by). */
  readonly origin?: RequestOrigin;
  /** Create: the sign-up was counted already (`admit`). */
  readonly admitted?: Admission;
  /** Update: the account checks ran already; the body is the one they returned. */
  readonly accountChecked?: boolean;
  /** Password hashes computed ahead. */
  readonly hashed?: PasswordHashes;
  /** Create: the record's id (a batch's upsert). */
  readonly id?: string;
}

/** What `prepare` did for a write: the body to write and how to call it. */
export interface PreparedWrite {
  readonly body: Record<string, unknown>;
  readonly call: WriteCall;
}

/**
 * What a read answer shows beyond the stored record, from the `expand` and
 * `fields` parameters, checked before anything is read or written.
 */
export interface AnswerShape {
  readonly plan: readonly ExpandNode[];
  readonly fields?: Projection;
}

/** The parameters of an answer's shape (the rest is the operation's). */
const SHAPE_PARAMS = ["expand", "fields"] as const;

function notFound(entity: Entity): MoonbaseError {
  return new MoonbaseError(
    "not_found",
    `Cannot find record in ${entity.name}: no such id, or not visible to you`,
  );
}

/** Rule-checked record operations. */
export class RecordService {
  #registry: Registry;
  #rules: RuleEngine;
  #cursorKey: CursorKey;
  #checks: AccountChecks;

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
    this.#cursorKey = cursorKey;
    this.#checks = checks;
  }

  /** The entity behind a records route; 404 when missing or without API. */
  entity(name: string): Entity {
    const e = this.#registry.byName(name);
    if (!isExposed(e, name)) {
      throw new MoonbaseError(
        "not_found",
        `Cannot find entity: no entity ${JSON.stringify(name.slice(0, 80))}`,
      );
    }
    assertServed(e, this.#registry.viewRefusal(e.id));
    return e;
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

  /** What `auth` may see and write through `op` (throws a denial). */
  async #access(
    entity: Entity,
    op: Operation,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access> {
    assertWritable(entity, op);
    const d = authorize(entity, op, auth);
    return d.kind === "allow"
      ? {}
      : await this.#rules.access(entity, op, d.expr, auth, req);
  }

  /**
   * The entity the API serves as `target` now (its name and id unchanged),
   * for reads of `auth` through relations and expansions; undefined when
   * none (not served, a view, refused views).
   */
  #served(target: { readonly id: string }): Entity | undefined {
    const e = this.#registry.get(target.id);
    if (!e || !isExposed(e, e.name) || e.type === "view") return undefined;
    return this.#registry.viewRefusal(e.id) === undefined ? e : undefined;
  }

  /**
   * What `auth` may see of `entity` through `op`, or undefined when its
   * rule mode refuses it outright (401/403 on its own route).
   */
  async #readable(
    entity: Entity,
    op: "get" | "list",
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<Access | undefined> {
    try {
      return await this.#access(entity, op, auth, req);
    } catch (err) {
      // Refused outright (401/403 on its own route): nothing is readable.
      if (
        err instanceof MoonbaseError &&
        (err.code === "unauthenticated" || err.code === "forbidden")
      ) return undefined;
      throw err;
    }
  }

  /**
   * What a caller's filter and sort may read of related entities: what
   * the caller could read of them itself (read as a GET of those records
   * would: no body, `req`'s query).
   */
  #view(auth: AuthValue, req: RuleRequest): CallerView {
    const read = readRequest(req);
    return {
      req: read,
      decide: (target, op) => {
        const e = this.#served(target);
        if (!e) return { kind: "none" };
        try {
          const d = authorize(e, op, auth);
          return d.kind === "allow"
            ? { kind: "all" }
            : { kind: "rule", expr: d.expr };
        } catch {
          return { kind: "none" }; // the rule mode refuses this caller
        }
      },
      access: (target, op) => {
        const e = this.#served(target);
        return e
          ? this.#readable(e, op, auth, read)
          : Promise.resolve(undefined);
      },
    };
  }

  /**
   * Runs a read by the schemas in memory while their version is checked
   * (PostgreSQL: `Registry.current`, alongside, so the read waits for no
   * extra round trip); when another instance had changed the entity, the
   * read runs again by its new schema and rules.
   */
  async #read<T>(entity: Entity, run: (e: Entity) => Promise<T>): Promise<T> {
    const checked = this.#registry.current();
    if (!checked) return await run(entity);
    const first = run(entity).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await checked;
    const got = await first;
    if (this.#registry.get(entity.id) !== entity) {
      return await run(this.entity(entity.name));
    }
    if (!got.ok) throw got.error;
    return got.value;
  }

  /**
   * The entity to write by: after the version check (PostgreSQL, before
   * the write), the entity as now stored. Uploads were checked against the
   * schema the request began with: when it changed, 409 (send it again).
   */
  async #writing(entity: Entity, write?: RecordWrite): Promise<Entity> {
    const checked = this.#registry.current();
    if (!checked) return entity;
    await checked;
    if (this.#registry.get(entity.id) === entity) return entity;
    if (write && write.uploads.size > 0) {
      throw new MoonbaseError(
        "conflict",
        `Cannot save record: entity ${entity.name} changed while the request was sent; send it again`,
      );
    }
    return this.entity(entity.name);
  }

  /** Lists records the caller may see. */
  list(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<ListResult> {
    return this.#read(entity, (e) => this.#list(e, query, auth, req));
  }

  async #list(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<ListResult> {
    const cursor = { key: this.#cursorKey, caller: callerOf(auth) };
    const access = await this.#access(entity, "list", auth, req);
    const shape = this.answerShape(entity, query, auth, "list records");
    if (shape) {
      query = new URLSearchParams(query);
      for (const p of SHAPE_PARAMS) query.delete(p);
    }
    const page = await this.#page(entity, query, auth, req, access, cursor);
    if (shape) {
      // In place: the page object carries whether rows were checked one by one.
      page.items = await this.present(entity, page.items, shape, auth, req);
    }
    return page;
  }

  async #page(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
    access: Access,
    cursor: { key: CursorKey; caller: string },
  ): Promise<ListResult> {
    if (access.keep !== undefined) sortUnderPerRowRule(query.get("sort"));
    // Under a per-row rule, search runs per row too (list.ts), for the
    // reason the filter does below.
    const searchRows = access.keep !== undefined;
    const view = this.#view(auth, req);
    const sorts = relationSorts(
      query,
      (path) => this.#rules.sortVia(entity, path, auth, req, view),
    );
    const filter = query.get("filter");
    if (filter === null || filter.trim() === "") {
      return await entity.records.list(query, {
        access,
        cursor,
        sorts,
        searchRows,
      });
    }
    // Under a per-row rule the filter runs per row too, after the rule: a
    // filter in SQL would choose which hidden rows use up the scan budget
    // (has_more, count's 400), an oracle on the values of hidden rows.
    const perRow = access.keep !== undefined;
    const filtered = both(
      access,
      await this.#rules.filter(entity, filter, auth, req, perRow, view),
    );
    return await entity.records.list(query, {
      access: filtered,
      filtered: true,
      cursor,
      sorts,
      searchRows,
    });
  }

  /**
   * Aggregates the records the caller may list (`GET …/aggregate`,
   * lib/records/aggregate.ts): the list rule and the `filter`, compiled
   * with the caller's values, must run in SQL (400 otherwise), so no row
   * the caller cannot list is read.
   */
  aggregate(
    entity: Entity,
    query: URLSearchParams,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<AggregateResult> {
    return this.#read(entity, async (e) => {
      let access = await this.#access(e, "list", auth, req);
      const filter = query.get("filter");
      if (
        filter !== null && filter.trim() !== "" &&
        query.getAll("filter").length === 1
      ) {
        // Per row under a per-row rule, as lists do: refused either way.
        const perRow = access.keep !== undefined;
        access = both(
          access,
          await this.#rules.filter(
            e,
            filter,
            auth,
            req,
            perRow,
            this.#view(auth, req),
          ),
        );
      }
      return await e.records.aggregate(query, { access, filtered: true });
    });
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

  /**
   * Reads a record the caller may see (404 otherwise), shaped by `query`'s
   * `expand` and `fields` when given.
   */
  async get(
    entity: Entity,
    id: string,
    auth: AuthValue,
    req: RuleRequest,
    query?: URLSearchParams,
  ): Promise<RecordData> {
    return await this.#read(entity, async (e) => {
      const access = await this.#access(e, "get", auth, req);
      const shape = query && this.answerShape(e, query, auth, "get record");
      const rec = await e.records.read(id, { access });
      if (!rec) throw notFound(e);
      if (!shape) return rec;
      return (await this.present(e, [rec], shape, auth, req))[0];
    });
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
      { lookup: (name) => this.#registry.byName(name), canUse, action },
      entity,
      parseExpand(expand, action),
    );
    const names: FieldNames = (name) => {
      const e = this.#registry.byName(name);
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
  async present(
    entity: Entity,
    records: readonly RecordData[],
    shape: AnswerShape,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<RecordData[]> {
    const now = this.#registry.get(entity.id) ?? entity;
    const out = await expandRecords(
      this.#expandScope(auth, readRequest(req), "expand records"),
      now,
      records,
      shape.plan,
    );
    const fields = shape.fields;
    return fields ? out.map((r) => project(r, fields)) : out;
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
    const scope = this.#expandScope(auth, EVENT_REQUEST, "expand event");
    return (await expandRecords(scope, entity, [record], plan))[0];
  }

  #expandScope(
    auth: AuthValue,
    req: RuleRequest,
    action: string,
  ): ExpandScope {
    return {
      action,
      entity: (name) => {
        const e = this.#registry.byName(name);
        if (!isExposed(e, name)) return undefined;
        return this.#registry.viewRefusal(e.id) === undefined ? e : undefined;
      },
      // Refused outright (401/403 on its own route): absent here.
      access: (e, op) => this.#readable(e, op, auth, req),
    };
  }

  /**
   * Refuses early (before a body is read) when the rule mode alone denies:
   * uploads are not written to disk for callers who may not write.
   */
  precheck(entity: Entity, op: Operation, auth: AuthValue): void {
    assertWritable(entity, op);
    authorize(entity, op, auth);
  }

  /**
   * `precheck` for a create, then counts a sign-up from `origin` (429 past
   * the limit), before the body is read: a refused client uploads nothing.
   * Hand the result to `create` as `admitted`.
   */
  async admit(
    entity: Entity,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<Admission> {
    this.precheck(entity, "add", auth);
    return { headers: await this.#checks.signup(entity, auth, origin) };
  }

  /**
   * Before a batch's transaction, what a write of `entity` by `auth` checks
   * and counts outside its own: for a create (and an upsert) a sign-up
   * counted against `origin` (429 past the limit); for an update (and an
   * upsert) the account checks (`oldPassword`, counted as a login attempt;
   * by the record as stored before the batch); a new password hashed.
   * A create and an update are refused here already when the rule mode
   * alone denies them (an upsert's branch is decided in the transaction).
   */
  async prepare(
    entity: Entity,
    op: "create" | "update" | "upsert",
    id: string | undefined,
    body: Record<string, unknown>,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<PreparedWrite> {
    let admitted: Admission | undefined;
    if (op === "create") admitted = await this.admit(entity, auth, origin);
    if (op === "upsert") {
      assertWritable(entity, "add");
      admitted = { headers: await this.#checks.signup(entity, auth, origin) };
    }
    if (op === "update") this.precheck(entity, "update", auth);
    if (op !== "create" && id !== undefined && entity.type === "auth") {
      body = await this.#checks.change(entity, id, body, auth, origin);
    }
    const hashed = await entity.records.hashAhead(body);
    return {
      body,
      call: { origin, admitted, accountChecked: op !== "create", hashed },
    };
  }

  /**
   * Resolves once the schemas in memory are as new as the stored ones
   * (PostgreSQL, `Registry.current`): a batch checks once, before its
   * transaction.
   */
  async fresh(): Promise<void> {
    await this.#registry.current();
  }

  /**
   * Creates a record; uploaded files are deleted when the create fails. A
   * sign-up is counted against `call.origin` unless `call.admitted` says it
   * was.
   */
  async create(
    entity: Entity,
    write: RecordWrite,
    auth: AuthValue,
    req: RuleRequest,
    call: WriteCall = {},
  ): Promise<RecordData> {
    let headers = call.admitted?.headers;
    let stored = false;
    try {
      entity = await this.#writing(entity, write);
      const access = await this.#access(entity, "add", auth, req);
      if (!call.admitted) {
        headers = await this.#checks.signup(entity, auth, call.origin);
      }
      return await entity.records.create(writable(entity, write.body, auth), {
        access,
        caller: auth,
        uploads: write.uploads,
        hashed: call.hashed,
        id: call.id,
        stored: () => stored = true,
      });
    } catch (err) {
      // A failure after the commit leaves the record's files to the record.
      if (!stored) await write.cleanup();
      throw headers && err instanceof MoonbaseError
        ? err.withHeaders(headers)
        : err;
    }
  }

  /**
   * Updates a record the caller may change (404 otherwise). On an auth
   * entity the account rules run first (`oldPassword`; a check counts as a
   * login attempt from `call.origin`), unless `call.accountChecked`.
   */
  async update(
    entity: Entity,
    id: string,
    write: RecordWrite,
    auth: AuthValue,
    req: RuleRequest,
    call: WriteCall = {},
  ): Promise<RecordData> {
    let rec: RecordData | undefined;
    let stored = false;
    try {
      entity = await this.#writing(entity, write);
      let body = write.body;
      if (entity.type === "auth") {
        this.precheck(entity, "update", auth); // 401/403 before a 400
        if (!call.accountChecked) {
          body = await this.#checks.change(entity, id, body, auth, call.origin);
          // Rules see the body without `oldPassword`.
          if (body !== write.body) req = withBody(req, body);
        }
      }
      const access = await this.#access(entity, "update", auth, req);
      rec = await entity.records.update(id, writable(entity, body, auth), {
        access,
        caller: auth,
        uploads: write.uploads,
        hashed: call.hashed,
        stored: () => stored = true,
      });
    } catch (err) {
      // A failure after the commit leaves the record's files to the record.
      if (!stored) await write.cleanup();
      throw err;
    }
    if (!rec) {
      await write.cleanup();
      throw notFound(entity);
    }
    return rec;
  }

  /** Deletes a record the caller may delete (404 otherwise). */
  async remove(
    entity: Entity,
    id: string,
    auth: AuthValue,
    req: RuleRequest,
  ): Promise<RecordData> {
    entity = await this.#writing(entity);
    const rec = await entity.records.remove(id, {
      access: await this.#access(entity, "delete", auth, req),
      caller: auth,
    });
    if (!rec) throw notFound(entity);
    return rec;
  }
}

/**
 * The sort keys of `query` that read through relations (`author.name`),
 * each resolved by `via` (400 when it reads nothing the caller may sort by).
 */
function relationSorts(
  query: URLSearchParams,
  via: (path: string[]) => SortVia,
): Map<string, SortVia> | undefined {
  const sort = query.get("sort");
  if (sort === null || !sort.includes(".")) return undefined;
  const out = new Map<string, SortVia>();
  for (const part of sort.split(",")) {
    const name = part.trim().replace(/^[-+]/, "");
    if (name.includes(".") && !out.has(name)) {
      out.set(name, via(name.split(".")));
    }
  }
  return out;
}

/** `req` with another body (its query read from `req` when a rule asks). */
function withBody(
  req: RuleRequest,
  body: Record<string, unknown>,
): RuleRequest {
  return {
    body,
    method: req.method,
    get query() {
      return req.query;
    },
  };
}

/** A record's readable field names (never `password`). */
function readableNames(entity: Entity): Set<string> {
  return new Set(
    entity.fields.map((f) => f.name).filter((n) => n !== "password"),
  );
}

/**
 * The request as the rules of expanded records see it: a read (method
 * GET, no body, as a GET of that record would be), with `req`'s query.
 */
function readRequest(req: RuleRequest): RuleRequest {
  return {
    body: {},
    method: "GET",
    get query() {
      return req.query;
    },
  };
}

/** What `req.*` holds for a rule deciding a realtime event. */
const EVENT_REQUEST: RuleRequest = Object.freeze({
  body: Object.freeze({}),
  query: Object.freeze({}),
  method: "GET",
}) as RuleRequest;
