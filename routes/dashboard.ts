/**
 * The admin dashboard at `/mb`: a static single-page app (setup, login,
 * entities, records, schema and rules). Every `/mb/*` path that is not an
 * asset answers the page, so deep links and the setup link work.
 *
 * @module
 */

import type { Core } from "../lib/core.ts";
import type { Handler } from "../lib/http/context.ts";
import type { Router } from "../lib/http/router.ts";

const ASSETS: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const cache = new Map<string, string>();

async function asset(name: string): Promise<string> {
  let text = cache.get(name);
  if (text === undefined) {
    text = await Deno.readTextFile(
      new URL(`../dashboard/${name}`, import.meta.url),
    );
    cache.set(name, text);
  }
  return text;
}

async function page(name: string): Promise<Response> {
  return new Response(await asset(name), {
    headers: {
      "content-type": ASSETS[name],
      "content-security-policy": CSP,
      "cache-control": "no-cache",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
    },
  });
}

/** Registers the dashboard routes. */
export function dashboardRoutes(r: Router<Handler<Core>>): void {
  r.add("GET", "/mb", () => page("index.html"));
  r.add(
    "GET",
    "/mb/:page",
    (ctx) =>
      page(
        Object.hasOwn(ASSETS, ctx.params.page) ? ctx.params.page : "index.html",
      ),
  );
}
