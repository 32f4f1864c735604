/**
 * Records API (spec §4.1) for every entity with `has_api`.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import type { RecordService, RuleRequest } from "../lib/records/service.ts";

function ruleRequest(
  ctx: Context<Core>,
  body: Record<string, unknown> = {},
): RuleRequest {
  return {
    body,
    query: Object.fromEntries(ctx.url.searchParams),
    method: ctx.req.method,
  };
}

/** Registers the record routes. */
export function recordRoutes(
  r: Router<Handler<Core>>,
  records: RecordService,
): void {
  const base = "/api/v1/entities/:entity";
  r.add("GET", base, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const page = await records.list(
      entity,
      ctx.url.searchParams,
      await ctx.auth(),
      ruleRequest(ctx),
    );
    return json(200, page);
  });
  r.add("GET", `${base}/:id`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    return json(
      200,
      await records.get(
        entity,
        ctx.params.id,
        await ctx.auth(),
        ruleRequest(ctx),
      ),
    );
  });
  r.add("POST", base, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const auth = await ctx.auth();
    const body = await readJsonObject(ctx.req, ctx.app.config.maxBodySize);
    return json(
      201,
      await records.create(entity, body, auth, ruleRequest(ctx, body)),
    );
  });
  r.add("PATCH", `${base}/:id`, async (ctx) => {
    const entity = records.entity(ctx.params.entity);
    const auth = await ctx.auth();
    const body = await readJsonObject(ctx.req, ctx.app.config.maxBodySize);
    return json(
      200,
      await records.update(
        entity,
        ctx.params.id,
        body,
        auth,
        ruleRequest(ctx, body),
      ),
    );
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
