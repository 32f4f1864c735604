/**
 * Batches (`POST /api/v1/batch`): several record writes in one transaction,
 * each through `RecordService` exactly as the records API runs it alone
 * (rules, account checks, validation, files, hooks).
 *
 * A batch runs in two steps. First, outside any transaction, what a single
 * write does before its own (`RecordService.prepare`): entity, rule mode,
 * the sign-up throttle, `oldPassword`, password hashing — counts that must
 * stand whatever the batch does, and work its transaction must not wait
 * for. Then one transaction, entered as a `WriteScope` (the scope record
 * hooks run in): every write's statements, before-hooks and journal
 * entries join it, and what each write does once committed — after-hooks,
 * realtime announcements, removing replaced files, ending sessions after a
 * password change — waits in the scope, released after the commit and
 * dropped on a rollback.
 *
 * Just over 350 lines, one idea: a batch's run from parse to answer (its
 * requests in order, the pipelined creates settled before every exit).
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";
import type { Pipelined, Storage } from "../db/storage.ts";
import { MoonbaseError } from "../errors.ts";
import { errorEnvelope } from "../http/envelope.ts";
import type { RequestOrigin } from "../http/request_scope.ts";
import type { RecordData } from "./codec.ts";
import type { Entity } from "./entity.ts";
import type { RuleRequest } from "./rule_types.ts";
import type { RecordService, RecordWrite, WriteCall } from "./service.ts";
import { WriteScope } from "./write_scope.ts";
import { type BatchCall, batchFailure } from "./batch_input.ts";

/** A batch's limits. */
export interface BatchLimits {
  /** Most requests in one batch (`--batchMaxRequests`). */
  readonly maxRequests: number;
  /**
   * Longest a batch's transaction may run, in ms (`--statementTimeout`;
   * 0: none): past it the batch is rolled back whole (503).
   */
  readonly timeoutMs: number;
}

/** One request's answer, as it would have been alone. */
export interface BatchAnswer {
  status: number;
  data: RecordData | null;
  error: string;
}

/** A batch that committed: an answer per request, and headers for the reply. */
export interface BatchResult {
  answers: BatchAnswer[];
  /** The `X-RateLimit-*` headers of the last sign-up counted. */
  headers: Record<string, string> | undefined;
}

/** Files uploaded for one request of a batch (`requests.<index>.<field>`). */
export interface BatchFiles {
  /** The entity the files were checked against. */
  readonly entity: Entity;
  /** Field → stored names. */
  readonly uploads: ReadonlyMap<string, readonly string[]>;
}

/** A request once prepared: what the transaction runs. */
interface Step {
  readonly call: BatchCall;
  readonly entity: Entity;
  readonly body: Record<string, unknown>;
  readonly opts: WriteCall;
  readonly uploads: ReadonlyMap<string, readonly string[]>;
}

const NO_CLEANUP = () => Promise.resolve();

/** Runs batches of record writes (see the module's comment). */
export class RecordBatches {
  readonly #service: RecordService;
  readonly #storage: Storage;
  /** The limits the batches run under. */
  readonly limits: BatchLimits;

  /** Batches through `service`, in transactions of `storage` (the app's). */
  constructor(service: RecordService, storage: Storage, limits: BatchLimits) {
    this.#service = service;
    this.#storage = storage;
    this.limits = limits;
  }

  /**
   * Runs `calls` as `auth` from `origin`, all or nothing. A failing request
   * fails the batch with its status (`batchFailure`); `files` are the files
   * uploaded with it, by request index (the caller removes them when the
   * batch fails).
   */
  async run(
    calls: readonly BatchCall[],
    auth: AuthValue,
    origin: RequestOrigin | undefined,
    files: ReadonlyMap<number, BatchFiles> = new Map(),
  ): Promise<BatchResult> {
    const deadline = this.limits.timeoutMs > 0
      ? Date.now() + this.limits.timeoutMs
      : Infinity;
    await this.#service.fresh();
    const steps: Step[] = [];
    let headers: Record<string, string> | undefined;
    for (const [i, call] of calls.entries()) {
      try {
        steps.push(await this.#prepare(call, files.get(i), auth, origin));
      } catch (err) {
        throw withHeaders(batchFailure(i, err), headers);
      }
      headers = steps[i].opts.admitted?.headers ?? headers;
    }
    const storage = this.#storage;
    // All or nothing: a write needs no savepoint of its own.
    const scope = new WriteScope(storage, false);
    let answers: BatchAnswer[];
    try {
      answers = await storage.transaction((tx) =>
        scope.run(tx, () => this.#steps(steps, auth, scope, deadline))
      );
    } catch (err) {
      throw withHeaders(err, headers);
    }
    try {
      await scope.flush();
    } catch (err) {
      // Committed: the batch's files belong to its records now.
      throw new AfterCommitFailure(err);
    }
    return { answers, headers };
  }

  /**
   * Runs the prepared `steps` in the batch's transaction `tx`, in order.
   * On PostgreSQL a create with nothing to wait for is sent without waiting
   * for its answer (`WriteScope.send`), so the creates of a batch go out
   * together; they are all answered before the batch commits, and the
   * first that failed is the batch's failure, as one by one (a later
   * request's own failure, or its hook, comes after them: `settle`).
   */
  async #steps(
    steps: readonly Step[],
    auth: AuthValue,
    scope: WriteScope,
    deadline: number,
  ): Promise<BatchAnswer[]> {
    const { timeoutMs } = this.limits;
    const out: BatchAnswer[] = [];
    let timeoutSet: number | undefined;
    // A failure: the first statement sent ahead that failed, if any (it
    // came first), else `err` (of request `step`, or the batch's own).
    const failure = async (step: number | undefined, err: unknown) => {
      const sent = await scope.settle();
      if (sent) {
        return sent.step === undefined
          ? sent.error
          : batchFailure(sent.step, stepError(steps[sent.step], sent.error));
      }
      return step === undefined ? err : batchFailure(step, err);
    };
    for (const [i, step] of steps.entries()) {
      let left: number;
      try {
        left = remaining(deadline, timeoutMs);
      } catch (err) {
        throw await failure(undefined, err);
      }
      if (scope.pipelines && left < Infinity) {
        // No statement of the batch runs past its deadline (sent ahead of
        // the request's own statements, in the same round trip). Behind
        // statements still unanswered, the request's start on the server
        // is not known here: the database counts what is left itself.
        const sql = timeoutSet === undefined
          ? firstTimeout(left)
          : scope.unanswered
          ? SERVER_TIMEOUT
          : left !== timeoutSet
          ? `SET LOCAL statement_timeout = ${left}`
          : undefined;
        if (sql) scope.send(sql, [], SET, undefined);
        timeoutSet = left;
      }
      scope.step = i;
      try {
        out.push(await this.#apply(step, auth));
      } catch (err) {
        throw await failure(i, err);
      }
    }
    if (await scope.settle()) throw await failure(undefined, undefined);
    remaining(deadline, timeoutMs);
    return out;
  }

  /** What a request does before the transaction (`RecordService.prepare`). */
  async #prepare(
    call: BatchCall,
    files: BatchFiles | undefined,
    auth: AuthValue,
    origin: RequestOrigin | undefined,
  ): Promise<Step> {
    const entity = this.#service.entity(call.entity);
    if (files && files.entity !== entity) {
      throw new MoonbaseError(
        "conflict",
        `Cannot save record: entity ${entity.name} changed while the request was sent; send it again`,
      );
    }
    const uploads = files?.uploads ?? new Map();
    const op = call.method === "POST"
      ? "create"
      : call.method === "PUT"
      ? "upsert"
      : call.method === "PATCH"
      ? "update"
      : undefined;
    if (!op) {
      return { call, entity, body: call.body, opts: { origin }, uploads };
    }
    const p = await this.#service.prepare(
      entity,
      op,
      call.id,
      call.body,
      auth,
      origin,
    );
    return { call, entity, body: p.body, opts: p.call, uploads };
  }

  /** Runs one prepared request in the batch's transaction. */
  async #apply(step: Step, auth: AuthValue): Promise<BatchAnswer> {
    const { call, entity, body, opts } = step;
    const service = this.#service;
    const req: RuleRequest = { body, query: {}, method: call.method };
    const write: RecordWrite = {
      body,
      uploads: step.uploads,
      cleanup: NO_CLEANUP,
    };
    const id = call.id ?? "";
    switch (call.method) {
      case "POST":
        return answer(
          201,
          await service.create(entity, write, auth, req, opts),
        );
      case "PATCH":
        return answer(
          200,
          await service.update(entity, id, write, auth, req, opts),
        );
      case "DELETE":
        await service.remove(entity, id, auth, req);
        return answer(204, null);
      case "PUT":
        // The id is held until the batch ends: a racing upsert of it waits,
        // then finds the record and updates it.
        if (await entity.records.claim(id)) {
          return answer(
            200,
            await service.update(entity, id, write, auth, req, opts),
          );
        }
        return answer(
          201,
          await service.create(entity, write, auth, req, { ...opts, id }),
        );
    }
  }
}

/**
 * The batch's first statement timeout, `left` ms, and its deadline as the
 * database's clock reads it (`moonbase.batch_deadline`, ms since the epoch,
 * for `SERVER_TIMEOUT`): both end with the transaction.
 */
function firstTimeout(left: number): string {
  return `SELECT set_config('statement_timeout', '${left}', true), set_config('moonbase.batch_deadline', (floor(extract(epoch FROM clock_timestamp()) * 1000) + ${left})::bigint::text, true)`;
}

/**
 * The statement timeout set to what is left of the batch's deadline when
 * the database runs it (at least 1 ms: 0 would be none).
 */
const SERVER_TIMEOUT =
  `SELECT set_config('statement_timeout', GREATEST(1, current_setting('moonbase.batch_deadline')::bigint - floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)::text, true)`;

/** A statement the batch sends for itself (its answer is not used). */
const SET: Pipelined = { done: () => {}, failed: (err) => err };

/**
 * A create's failure as it would have left the create (`RecordWrites.create`
 * adds its sign-up's rate limit headers).
 */
function stepError(step: Step, err: unknown): unknown {
  const headers = step.opts.admitted?.headers;
  return headers && err instanceof MoonbaseError
    ? err.withHeaders(headers)
    : err;
}

function answer(status: number, data: RecordData | null): BatchAnswer {
  return { status, data, error: "" };
}

/**
 * The ms left before `deadline`; throws the batch's timeout (503) once it
 * has passed. Infinity without one.
 */
function remaining(deadline: number, timeoutMs: number): number {
  if (deadline === Infinity) return Infinity;
  const left = Math.floor(deadline - Date.now());
  if (left <= 0) {
    throw new MoonbaseError(
      "unavailable",
      `Cannot run batch: it ran longer than the statement timeout (${
        timeoutMs / 1000
      } s); nothing was applied. Send fewer requests, or try again`,
      null,
      { "retry-after": "5" },
    );
  }
  return left;
}

/** `err` with the sign-up headers too (its own, such as a 429's, win). */
function withHeaders(
  err: unknown,
  headers: Record<string, string> | undefined,
): unknown {
  if (!headers || !(err instanceof MoonbaseError)) return err;
  return MoonbaseError.withStatus(
    errorEnvelope(err)?.status ?? 500,
    err.message,
    err.data,
    { ...headers, ...err.headers },
  );
}

/**
 * What a batch throws when the work after its commit failed (`cause`):
 * the writes stand, so the uploads of the request must not be removed.
 */
export class AfterCommitFailure extends Error {
  /** Wraps the failure of the work after the commit. */
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}
