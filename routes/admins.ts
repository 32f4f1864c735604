/**
 * Admin authentication: first-admin setup, login and the admins API.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import { type Core, hasAdmin } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import type { Context } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { Entity } from "../lib/records/entity.ts";
import { removeAdmin } from "../lib/auth/admins.ts";
import { limitedLogin } from "./login_limit.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** What these routes read of the app: the admin accounts, their sessions and first-admin setup. */
export type AdminsHost = Pick<
  Core,
  | "schemas"
  | "sessions"
  | "setupGate"
  | "setupToken"
  | "storage"
  | "limiter"
  | "log"
>;

function admins(core: AdminsHost): Entity {
  return core.schemas.get("mb_admins")!;
}

/** `POST /api/v1/sys/admins/setup`: only while no admin exists, with the setup token. */
export async function setupAdmin(ctx: Context<AdminsHost>): Promise<Response> {
  const core = ctx.app;
  const run = core.setupGate.run(async () => {
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
    const body = await ctx.body();
    const { email, password } = body;
    const user = await admins(core).create({ email, password });
    core.setupToken = undefined;
    return await core.sessions.issue(admins(core), user);
  });
  return json(201, await run);
}

/** `POST /api/v1/sys/admins/login` (rate-limited like every login). */
export function loginAdmin(ctx: Context<AdminsHost>): Promise<Response> {
  return limitedLogin(ctx, async () => {
    const body = await ctx.body();
    return await ctx.app.sessions.login(admins(ctx.app), body);
  }, "mb_admins");
}

function adminNotFound(id: string): MoonbaseError {
  return new MoonbaseError(
    "not_found",
    `Cannot find admin: no admin ${JSON.stringify(id.slice(0, 80))}`,
  );
}

/** Registers admin routes. */
export function adminRoutes(r: RouteTarget<AdminsHost>): void {
  const admin = guarded(r, requireAdmin);
  r.add("POST", "/api/v1/sys/admins/setup", setupAdmin);
  // Public: whether the server still waits for its first admin (the
  // dashboard shows how to claim it). The token itself is never revealed.
  r.add("GET", "/api/v1/sys/admins/setup", async (ctx) =>
    json(200, {
      required: ctx.app.setupToken !== undefined &&
        !(await hasAdmin(ctx.app.storage)),
    }));
  r.add("POST", "/api/v1/sys/admins/login", loginAdmin);
  r.add("POST", "/api/v1/sys/admins/refresh", async (ctx) => {
    return json(
      200,
      await ctx.app.sessions.refresh(
        ctx.req.headers.get("authorization"),
        admins(ctx.app),
      ),
    );
  });
  r.add("POST", "/api/v1/sys/admins/logout", async (ctx) => {
    await ctx.app.sessions.logout(
      ctx.req.headers.get("authorization"),
      admins(ctx.app),
    );
    return json(200, null);
  });
  admin.add("GET", "/api/v1/sys/admins", async (ctx) => {
    return json(200, await admins(ctx.app).list(ctx.url.searchParams));
  });
  admin.add("POST", "/api/v1/sys/admins", async (ctx) => {
    const body = await ctx.body();
    return json(
      201,
      await admins(ctx.app).create(body, { caller: await ctx.auth() }),
    );
  });
  admin.add("GET", "/api/v1/sys/admins/:id", async (ctx) => {
    const rec = await admins(ctx.app).read(ctx.params.id);
    if (!rec) throw adminNotFound(ctx.params.id);
    return json(200, rec);
  });
  admin.add("PATCH", "/api/v1/sys/admins/:id", async (ctx) => {
    const body = await ctx.body();
    const entity = admins(ctx.app);
    // A new password ends the admin's sessions, but the caller's own.
    const rec = await entity.update(ctx.params.id, body, {
      caller: await ctx.auth(),
    });
    if (!rec) throw adminNotFound(ctx.params.id);
    return json(200, rec);
  });
  admin.add("DELETE", "/api/v1/sys/admins/:id", async (ctx) => {
    const entity = admins(ctx.app);
    if (!(await entity.recordExists(ctx.params.id))) {
      throw adminNotFound(ctx.params.id);
    }
    if (!(await removeAdmin(entity, ctx.params.id))) {
      throw adminNotFound(ctx.params.id);
    }
    return noContent();
  });
}
