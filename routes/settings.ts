/**
 * `GET|PATCH /api/v1/sys/settings` and `POST /api/v1/sys/settings/test-mail`
 * (admin only).
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import { readJsonObject } from "../lib/http/body.ts";
import type { Context, Handler } from "../lib/http/context.ts";
import { json, noContent } from "../lib/http/envelope.ts";
import type { Router } from "../lib/http/router.ts";
import { guarded } from "../lib/http/route_group.ts";
import { publicSettings } from "../lib/settings/validate.ts";
import { sendTestMail } from "../lib/mail/test_mail.ts";
import { requireAdmin } from "./guards.ts";

function body(ctx: Context<Core>): Promise<Record<string, unknown>> {
  return readJsonObject(ctx.req, ctx.app.config.maxBodySize, ctx.app.bodies);
}

/** Registers the settings routes. */
export function settingsRoutes(r: Router<Handler<Core>>): void {
  const admin = guarded(r, requireAdmin);
  admin.add(
    "GET",
    "/api/v1/sys/settings",
    async (ctx) => json(200, publicSettings(await ctx.app.settings.read())),
  );
  admin.add("PATCH", "/api/v1/sys/settings", async (ctx) => {
    const input = await body(ctx);
    const settings = await ctx.app.settings.update(input);
    // Mail waiting out a backoff goes with the new mail settings at once.
    if (input.mail !== undefined) await ctx.app.outbox.hurry();
    return json(200, publicSettings(settings));
  });
  admin.add("POST", "/api/v1/sys/settings/test-mail", async (ctx) => {
    const input = await body(ctx);
    await sendTestMail(
      await ctx.app.settings.read(),
      ctx.app.sendMail,
      ctx.app.log,
      input,
    );
    return noContent();
  });
}
