/**
 * Schemas API, admin only.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";
import { writeDevMigration } from "../lib/migrations/dev_writer.ts";
import { recordCounts } from "../lib/schema/counts.ts";
import { shownSchema as shown } from "../lib/schema/shown.ts";
import {
  exportSchemas,
  importSchemas,
  readImportRequest,
} from "../lib/records/schema_import.ts";

/** What these routes read of the app: the entity registry. */
export type SchemasHost = Pick<Core, "config" | "log" | "schemas" | "storage">;

function notFound(id: string): MoonbaseError {
  return new MoonbaseError(
    "not_found",
    `Cannot find entity: no entity ${JSON.stringify(id.slice(0, 80))}`,
  );
}

/** Registers the schema routes. */
export function schemaRoutes(r: RouteTarget<SchemasHost>): void {
  const admin = guarded(r, requireAdmin);
  admin.add(
    "GET",
    "/api/v1/schemas",
    (ctx) => json(200, ctx.app.schemas.all().map((e) => shown(e.schema))),
  );
  // Record counts for the dashboard's sidebar: one bounded count per
  // entity (at most COUNT_CAP + 1), null where it fails (a broken view).
  admin.add("GET", "/api/v1/sys/counts", async (ctx) => {
    return json(
      200,
      await recordCounts(ctx.app.storage, ctx.app.schemas.all()),
    );
  });
  // Before `/:id`: an entity named "export" is read by its id here.
  admin.add("GET", "/api/v1/schemas/export", (ctx) =>
    json(200, {
      schemas: exportSchemas(ctx.app.schemas.all().map((e) => e.schema)),
    }));
  admin.add("POST", "/api/v1/schemas/import", async (ctx) => {
    const request = readImportRequest(await ctx.body());
    const { changes, applied } = await importSchemas(
      ctx.app.schemas,
      request,
    );
    if (applied) {
      ctx.app.log.info("schemas imported", {
        changes: changes.map((c) => `${c.action} ${c.entity}`),
      });
      await writeDevMigration(ctx.app, applied, "import_schemas");
    }
    return json(200, { changes, dry_run: request.dryRun });
  });
  admin.add("GET", "/api/v1/schemas/:id", (ctx) => {
    const e = ctx.app.schemas.get(ctx.params.id);
    if (!e) throw notFound(ctx.params.id);
    return json(200, shown(e.schema));
  });
  admin.add("POST", "/api/v1/schemas", async (ctx) => {
    const input = await ctx.body();
    const applied = await ctx.app.schemas.apply(() => [
      { action: "create", input },
    ]);
    const e = ctx.app.schemas.get(applied.results[0]!.id)!;
    ctx.app.log.info("schema created", { entity: e.name, id: e.id });
    await writeDevMigration(ctx.app, applied, `create_${e.name}`);
    return json(201, shown(e.schema));
  });
  admin.add("PATCH", "/api/v1/schemas/:id", async (ctx) => {
    const input = await ctx.body();
    const applied = await ctx.app.schemas.apply(() => [
      { action: "update", entity: ctx.params.id, input },
    ]);
    const e = ctx.app.schemas.get(applied.results[0]!.id)!;
    ctx.app.log.info("schema changed", { entity: e.name, id: e.id });
    await writeDevMigration(ctx.app, applied, `update_${e.name}`);
    return json(200, shown(e.schema));
  });
  admin.add("DELETE", "/api/v1/schemas/:id", async (ctx) => {
    const applied = await ctx.app.schemas.apply(() => [
      { action: "delete", entity: ctx.params.id },
    ]);
    const gone = applied.before.find((s) =>
      !applied.after.some((a) => a.id === s.id)
    );
    ctx.app.log.info("schema deleted", { entity: ctx.params.id.slice(0, 64) });
    await writeDevMigration(
      ctx.app,
      applied,
      `delete_${gone?.name ?? "entity"}`,
    );
    return noContent();
  });
}
