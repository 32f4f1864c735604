/**
 * Rule-checked writes (`RecordService.create`, `update`, `remove`, and what
 * a request or a batch does before them): the rule mode refused before a
 * body is read (`precheck`), a sign-up counted (`admit`), the account
 * checks of an auth entity (`oldPassword`) and password hashes ahead of a
 * batch's transaction (`prepare`), then the write by the entity as now
 * stored under its rule's `Access`. Uploaded files are deleted when the
 * write fails before its commit (after it, they are the record's).
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { Operation } from "../schema/types.ts";
import type { RequestOrigin } from "../http/request_scope.ts";
import { assertWritable, authorize } from "./access.ts";
import type { RuleRequest } from "./rule_types.ts";
import type { AccountChecks } from "./write_checks.ts";
import type { RecordData } from "./codec.ts";
import { writable } from "./caller_limits.ts";
import type { PasswordHashes } from "./entity_records.ts";
import { notFound, type ServedAccess } from "./served_access.ts";

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

/** Creates, updates and deletes records as a caller may. */
export class RecordWrites {
  readonly #served: ServedAccess;
  readonly #checks: AccountChecks;

  /**
   * `checks` are the account rules every create and update runs (sign-up
   * throttle, `oldPassword`).
   */
  constructor(served: ServedAccess, checks: AccountChecks) {
    this.#served = served;
    this.#checks = checks;
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
      entity = await this.#served.writing(entity, write.uploads.size > 0);
      const access = await this.#served.access(entity, "add", auth, req);
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
      entity = await this.#served.writing(entity, write.uploads.size > 0);
      let body = write.body;
      if (entity.type === "auth") {
        this.precheck(entity, "update", auth); // 401/403 before a 400
        if (!call.accountChecked) {
          body = await this.#checks.change(entity, id, body, auth, call.origin);
          // Rules see the body without `oldPassword`.
          if (body !== write.body) req = withBody(req, body);
        }
      }
      const access = await this.#served.access(entity, "update", auth, req);
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
    entity = await this.#served.writing(entity);
    const rec = await entity.records.remove(id, {
      access: await this.#served.access(entity, "delete", auth, req),
      caller: auth,
    });
    if (!rec) throw notFound(entity);
    return rec;
  }
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
