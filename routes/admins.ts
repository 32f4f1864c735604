/**
 * Admin authentication (spec §4.3): first-admin setup and login.
 *
 * @module
 */

import { type Core, hasAdmin } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import { json } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import type { Entity } from "../lib/schema/entity.ts";

function admins(core: Core): Entity {
  return core.schemas.get("mb_admins")!;
}

let setupLock: Promise<unknown> = Promise.resolve();

/** `POST /api/v1/sys/admins/setup`: only while no admin exists, with the setup token. */
export async function setupAdmin(ctx: Context<Core>): Promise<Response> {
  const core = ctx.app;
  const run = setupLock.then(async () => {
    if (await hasAdmin(core.storage)) {
      core.setupToken = undefined;
      throw new MoonbaseError(
        "forbidden",
        "Cannot set up: an admin account already exists",
      );
    }
    const given = /^Bearer\s+(\S+)$/i.exec(
      ctx.req.headers.get("authorization") ?? "",
    )?.[1];
    if (!core.setupToken || given !== core.setupToken) {
      throw new MoonbaseError(
        "unauthenticated",
        "Cannot set up: the setup token printed at start is required",
      );
    }
    const body = await readJsonObject(ctx.req, core.config.maxBodySize);
    const { email, password } = body;
    const user = await admins(core).create({ email, password });
    core.setupToken = undefined;
    return await core.sessions.issue(admins(core), user);
  });
  setupLock = run.catch(() => {});
  return json(201, await run);
}

/** `POST /api/v1/sys/admins/login`. */
export async function loginAdmin(ctx: Context<Core>): Promise<Response> {
  const body = await readJsonObject(ctx.req, ctx.app.config.maxBodySize);
  return json(200, await ctx.app.sessions.login(admins(ctx.app), body));
}

/** Registers admin routes. */
export function adminRoutes(r: Router<Handler<Core>>): void {
  r.add("POST", "/api/v1/sys/admins/setup", setupAdmin);
  r.add("POST", "/api/v1/sys/admins/login", loginAdmin);
}
