/**
 * File routes: `GET|HEAD /api/files/<entity>/<name>` (alias
 * `/api/v1/files/...`; `?thumb=<W>x<H>[t|b|f]` for a thumbnail, behind the
 * same checks as the file) and `POST /api/v1/files/token` for short-lived
 * file tokens (`?token=` in `<img src>`).
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import type { Context } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import { fileOwner } from "../lib/files/owner.ts";
import { serveFile } from "../lib/files/serve.ts";
import type { RecordService } from "../lib/records/service.ts";
import { isExposed } from "../lib/records/access.ts";
import { type AuthValue, GUEST } from "../lib/caller.ts";

/** What these routes read of the app: the file store and the caller's file tokens. */
export type FilesHost = Pick<
  Core,
  "files" | "schemas" | "sessions" | "storage" | "thumbs"
>;

function notFound(): MoonbaseError {
  return new MoonbaseError("not_found", "Cannot find file");
}

async function download(
  ctx: Context<FilesHost>,
  records: RecordService,
): Promise<Response> {
  const core = ctx.app;
  const entity = core.schemas.byName(ctx.params.entity);
  if (!isExposed(entity, ctx.params.entity)) throw notFound();
  const open = entity.rules.get.mode === "public";
  // A presented token is checked first, before the file is looked up: an
  // invalid, expired or revoked one is a 401 whatever the name (so it tells
  // nothing about which files exist). Files of public entities ignore tokens.
  const query = ctx.url.searchParams.get("token");
  const header = ctx.req.headers.get("authorization") ??
    (query ? `Bearer ${query}` : null);
  let auth: AuthValue | undefined;
  if (!open) auth = await core.sessions.resolve(header, "file");
  if (!core.files.isStoredName(ctx.params.name)) throw notFound();
  const owner = await fileOwner(core.storage, entity, ctx.params.name);
  if (!owner) throw notFound();
  if (auth) {
    // A caller the rule refuses (a guest included) sees a missing file.
    try {
      await records.get(entity, owner.id, auth, {
        body: {},
        query: {},
        method: "GET",
      });
    } catch (err) {
      if (err instanceof MoonbaseError) throw notFound();
      throw err;
    }
  }
  let served = { name: ctx.params.name };
  const thumb = ctx.url.searchParams.get("thumb");
  if (thumb !== null) {
    // A public file's token is read only for an admin's unlisted sizes: a
    // bad one answers as no token would.
    if (open && header) {
      auth = await core.sessions.resolve(header, "file").catch(() => GUEST);
    }
    served = await core.thumbs.pick(
      entity.id,
      ctx.params.name,
      owner.field,
      thumb,
      auth,
    ) ?? served;
  }
  const res = await serveFile(
    ctx.req,
    core.files.backend,
    entity.id,
    served.name,
    open ? "public, max-age=3600" : "private, no-cache",
    owner.field.mime_types,
  );
  if (!res) throw notFound();
  return res;
}

/** Registers the file routes. */
export function fileRoutes(
  r: RouteTarget<FilesHost>,
  records: RecordService,
): void {
  for (const prefix of ["/api/files", "/api/v1/files"]) {
    r.add("GET", `${prefix}/:entity/:name`, (ctx) => download(ctx, records));
  }
  r.add("POST", "/api/v1/files/token", async (ctx) => {
    return json(200, await ctx.app.sessions.fileToken(await ctx.auth()));
  });
}
