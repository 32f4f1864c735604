/**
 * `GET /api/v1/openapi.json` (the OpenAPI 3.1 document, for the caller) and
 * `GET /api/v1/types.ts` (admins: the entities' TypeScript types), both made
 * on each request from the schemas in memory (lib/openapi), so they follow
 * schema changes without a restart.
 *
 * @module
 */

import { type Core, VERSION } from "../lib/core.ts";
import type { Context } from "../lib/http/context.ts";
import { guarded, type RouteTarget } from "../lib/http/route_group.ts";
import { allEntities, describedEntities } from "../lib/openapi/described.ts";
import { openApiDocument } from "../lib/openapi/document.ts";
import { typesModule } from "../lib/openapi/types_ts.ts";
import { requireAdmin } from "./guards.ts";

/** What these routes read of the app. */
export type OpenApiHost = Pick<
  Core,
  "records" | "schemas" | "settings" | "sync"
>;

const HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** The schemas in memory, caught up with other isolates and instances. */
async function caughtUp(ctx: Context<OpenApiHost>): Promise<void> {
  await ctx.app.sync.fresh(); // another isolate's change, with --workers
  await ctx.app.schemas.current(); // another instance's, on PostgreSQL
}

/**
 * Registers the routes; `routes` lists the router's registrations when a
 * document is made (routes added later, by `app.route`, included).
 */
export function openApiRoutes(
  r: RouteTarget<OpenApiHost>,
  routes: () => Iterable<[string, string]>,
): void {
  r.add("GET", "/api/v1/openapi.json", async (ctx) => {
    await caughtUp(ctx);
    const auth = await ctx.auth();
    const settings = await ctx.app.settings.current();
    const doc = openApiDocument({
      version: VERSION,
      title: settings.app.name,
      routes: routes(),
      entities: await describedEntities(ctx.app.records, auth),
      caller: auth.type,
    });
    return new Response(JSON.stringify(doc), {
      headers: {
        ...HEADERS,
        "content-type": "application/json; charset=utf-8",
      },
    });
  });
  guarded(r, requireAdmin).add("GET", "/api/v1/types.ts", async (ctx) => {
    await caughtUp(ctx);
    const ts = typesModule(allEntities(ctx.app.records.served()), {
      version: VERSION,
    });
    return new Response(ts, {
      headers: {
        ...HEADERS,
        "content-type": "text/plain; charset=utf-8",
        "content-disposition": 'inline; filename="moonbase-types.ts"',
      },
    });
  });
}
