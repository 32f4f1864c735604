/**
 * Records API for every entity with `has_api`.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { MoonbaseError, StorageUnavailableError } from "../lib/errors.ts";
import { project } from "../lib/records/expand/fields.ts";
import { mediaType } from "../lib/http/body.ts";
import { readMultipartWrite } from "../lib/files/upload.ts";
import type { Entity } from "../lib/records/entity.ts";
import type { Context } from "../lib/http/context.ts";
import { noContent } from "../lib/http/envelope.ts";
import { checkedPerRow, PER_ROW_HEADERS } from "../lib/records/list.ts";
import type {
  AnswerShape,
  RecordService,
  RecordWrite,
} from "../lib/records/service.ts";
import type { RecordData } from "../lib/records/codec.ts";
import type { AuthValue } from "../lib/caller.ts";
import type { RuleRequest } from "../lib/records/rule_types.ts";

/** What these routes read of the app: body limits, uploads and the instance sync (records come as `RecordService`). */
export type RecordsHost = Pick<Core, "bodies" | "config" | "files" | "sync">;

/**
 * The request as rules see it; `query` is built only if a rule reads it.
 * It keeps the URL, not the request's context: holding the context, it
 * kept the whole request and its answer alive past young-generation
 * collections (measured in-process: a filtered list's garbage collection
 * 228 → 113 ms for 20 000 lists once it held only the URL).
 */
class LazyRuleRequest implements RuleRequest {
  readonly body: Record<string, unknown>;
  readonly method: string;
  #url: string;
  #query: Record<string, string> | undefined;

  constructor(ctx: Context<RecordsHost>, body: Record<string, unknown>) {
    this.#url = ctx.req.url;
    this.body = body;
    this.method = ctx.req.method;
  }

  get query(): Record<string, string> {
    return this.#query ??= Object.fromEntries(new URL(this.#url).searchParams);
  }
}

function ruleRequest(
  ctx: Context<RecordsHost>,
  body: Record<string, unknown> = {},
): RuleRequest {
  return new LazyRuleRequest(ctx, body);
}

/** Reads a JSON or multipart write body. */
async function readWrite(
  ctx: Context<RecordsHost>,
  entity: Entity,
): Promise<RecordWrite> {
  if (mediaType(ctx.req) === "multipart/form-data" && entity.type !== "view") {
    return await readMultipartWrite(
      ctx.req,
      entity,
      ctx.app.files,
      ctx.app.config.maxUploadSize,
      ctx.app.bodies,
    );
  }
  const body = await ctx.body();
  return { body, uploads: new Map(), cleanup: () => Promise.resolve() };
}

/**
 * Reads a write's body, then checks that the entity is still the one the
 * request was checked against: a body that takes its time may span a schema
 * change (a rule tightened, a field bounded), and the write must not be
 * stored under what an admin has just replaced (409: send it again).
 */
async function readFresh(
  ctx: Context<RecordsHost>,
  records: RecordService,
  entity: Entity,
): Promise<RecordWrite> {
  const write = await readWrite(ctx, entity);
  try {
    await ctx.app.sync.fresh(); // another isolate's change, with --workers
    if (records.entity(ctx.params.entity) !== entity) {
      throw new MoonbaseError(
        "conflict",
        `Cannot save record: entity ${entity.name} changed while the request was sent; send it again`,
      );
    }
  } catch (err) {
    await write.cleanup();
    throw err;
  }
  return write;
}

/**
 * A written record as the answer's shape asks (`expand`, `fields`), and
 * the headers to add. The record was written: an expansion that fails
 * (more records than one answer holds, the database gone meanwhile) must
 * not read as a failed write, which a client would send again, so the
 * record is answered without expansions and `X-Moonbase-Expand` says why.
 */
async function answer(
  records: RecordService,
  entity: Entity,
  rec: RecordData,
  shape: AnswerShape,
  auth: AuthValue,
  req: RuleRequest,
): Promise<{ record: RecordData; headers?: Record<string, string> }> {
  try {
    return {
      record: (await records.present(entity, [rec], shape, auth, req))[0],
    };
  } catch (err) {
    const why = err instanceof MoonbaseError
      ? err.message
      : err instanceof StorageUnavailableError
      ? "Cannot expand: the database did not answer"
      : undefined;
    if (why === undefined) throw err; // a bug: the pipeline logs it (500)
    return {
      record: shape.fields ? project(rec, shape.fields) : rec,
      headers: { "X-Moonbase-Expand": `failed; ${why.slice(0, 300)}` },
    };
  }
}

/** Registers the record routes. */
export function recordRoutes(
  r: RouteTarget<RecordsHost>,
  records: RecordService,
): void {
  const base = "/api/v1/entities/:entity";
  r.add("GET", base, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const page = await records.list(
      entity,
      ctx.query,
      await ctx.auth(),
      ruleRequest(ctx),
    );
    return ctx.json(
      200,
      page,
      checkedPerRow(page) ? PER_ROW_HEADERS : undefined,
    );
  });
  // Static segments win over `:id` (record ids are UUIDs: none is "aggregate").
  r.add("GET", `${base}/aggregate`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    return ctx.json(
      200,
      await records.aggregate(
        entity,
        ctx.query,
        await ctx.auth(),
        ruleRequest(ctx),
      ),
    );
  });
  r.add("GET", `${base}/:id`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    return ctx.json(
      200,
      await records.get(
        entity,
        ctx.params.id,
        await ctx.auth(),
        ruleRequest(ctx),
        ctx.query,
      ),
    );
  });
  r.add("POST", base, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const auth = await ctx.auth();
    // Before the body: a refused caller or a throttled sign-up uploads nothing.
    const admitted = await records.admit(entity, auth, ctx);
    let write: RecordWrite;
    let shape: AnswerShape | undefined;
    try {
      // The answer's shape is checked before anything is written.
      shape = records.answerShape(
        entity,
        ctx.query,
        auth,
        "create record",
      );
      write = await readFresh(ctx, records, entity);
    } catch (err) {
      throw admitted.headers && err instanceof MoonbaseError
        ? err.withHeaders(admitted.headers)
        : err;
    }
    const req = ruleRequest(ctx, write.body);
    const rec = await records.create(entity, write, auth, req, {
      origin: ctx,
      admitted,
    });
    if (!shape) return ctx.json(201, rec, admitted.headers);
    const a = await answer(records, entity, rec, shape, auth, req);
    return ctx.json(201, a.record, { ...admitted.headers, ...a.headers });
  });
  r.add("PATCH", `${base}/:id`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const auth = await ctx.auth();
    records.precheck(entity, "update", auth);
    // The answer's shape is checked before anything is written.
    const shape = records.answerShape(
      entity,
      ctx.query,
      auth,
      "update record",
    );
    const write = await readFresh(ctx, records, entity);
    const req = ruleRequest(ctx, write.body);
    const rec = await records.update(
      entity,
      ctx.params.id,
      write,
      auth,
      req,
      { origin: ctx },
    );
    if (!shape) return ctx.json(200, rec);
    const a = await answer(records, entity, rec, shape, auth, req);
    return ctx.json(200, a.record, a.headers);
  });
  r.add("DELETE", `${base}/:id`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    await records.remove(
      entity,
      ctx.params.id,
      await ctx.auth(),
      ruleRequest(ctx),
    );
    return noContent();
  });
}
