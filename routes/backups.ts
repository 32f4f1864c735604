/**
 * `/api/v1/sys/backups` (admins): list, create, download, upload, delete
 * and restore backups (lib/backup). Downloads also take an admin's
 * short-lived file token as `?token=` (from `POST /api/v1/files/token`), for
 * a plain link.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { guarded } from "../lib/http/route_group.ts";
import { boundaryOf, parseMultipart } from "../lib/files/multipart.ts";
import { requireAdmin } from "./guards.ts";

async function downloadAuth(ctx: Context<Core>): Promise<void> {
  const query = ctx.url.searchParams.get("token");
  const header = ctx.req.headers.get("authorization");
  if (!query || header) {
    await requireAdmin(ctx);
    return;
  }
  const auth = await ctx.app.sessions.resolve(`Bearer ${query}`, "file");
  if (auth.type !== "admin") {
    throw new MoonbaseError("forbidden", "Cannot continue: admins only");
  }
}

async function upload(ctx: Context<Core>): Promise<Response> {
  const type = ctx.req.headers.get("content-type") ?? "";
  if (!type.toLowerCase().startsWith("multipart/form-data") || !ctx.req.body) {
    throw new MoonbaseError(
      "unsupported_media_type",
      "Cannot upload backup: send multipart/form-data with the archive in a part named file",
    );
  }
  let name: string | undefined;
  for await (
    const part of parseMultipart(
      ctx.req.body,
      boundaryOf(type),
      4,
      ctx.app.bodies,
    )
  ) {
    if (part.name === "name" && part.filename === undefined) {
      let text = "";
      for await (const c of part.body()) text += new TextDecoder().decode(c);
      name = text.trim();
      continue;
    }
    if (part.name !== "file") continue;
    const info = await ctx.app.backups.upload(
      name || part.filename || "",
      part.body(),
    );
    return json(201, info);
  }
  throw new MoonbaseError(
    "invalid",
    "Cannot upload backup: no part named file holds the archive",
    { file: { code: "required", message: "the archive is missing" } },
  );
}

/** Registers the backup routes. */
export function backupRoutes(r: Router<Handler<Core>>): void {
  const admin = guarded(r, requireAdmin);
  admin.add(
    "GET",
    "/api/v1/sys/backups",
    async (ctx) => json(200, await ctx.app.backups.list()),
  );
  admin.add("POST", "/api/v1/sys/backups", async (ctx) => {
    const body = await readJsonObject(
      ctx.req,
      ctx.app.config.maxBodySize,
      ctx.app.bodies,
    );
    if (body.name !== undefined && typeof body.name !== "string") {
      throw new MoonbaseError(
        "invalid",
        "Cannot create backup: name must be a string",
        {
          name: { code: "invalid", message: "must be a string" },
        },
      );
    }
    const made = await ctx.app.backups.create(body.name);
    return json(201, {
      name: made.name,
      size: made.size,
      created: made.created,
    });
  });
  admin.add("POST", "/api/v1/sys/backups/upload", upload);
  admin.add("DELETE", "/api/v1/sys/backups/:name", async (ctx) => {
    await ctx.app.backups.remove(ctx.params.name);
    return noContent();
  });
  admin.add("POST", "/api/v1/sys/backups/:name/restore", async (ctx) => {
    const manifest = await ctx.app.backups.restore(ctx.params.name);
    return json(200, {
      name: ctx.params.name,
      created: manifest.created,
      database: manifest.database,
      moonbase: manifest.moonbase,
      tables: manifest.tables,
      files: manifest.files,
    });
  });
  // Downloads check the caller themselves (a header or `?token=`).
  r.add("GET", "/api/v1/sys/backups/:name", async (ctx) => {
    await downloadAuth(ctx);
    const { info, body } = await ctx.app.backups.open(ctx.params.name);
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "application/gzip",
        "content-length": String(info.size),
        "content-disposition": `attachment; filename="${info.name}"`,
        "cache-control": "private, no-store",
        "x-content-type-options": "nosniff",
      },
    });
  });
}
