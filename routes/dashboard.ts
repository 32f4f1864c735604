/**
 * The admin dashboard at `/mb`: a single-page app built from
 * `dashboard/src/` into `dashboard/dist/app.js` (`deno task build`). Its
 * assets live under `/mb/assets/`; every other `/mb/*` path answers the
 * page, so deep links and the setup link load the app.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import { contentTypeOf } from "../lib/http/static.ts";

/** Asset name → file, relative to `dashboard/`. */
const ASSETS: Record<string, string> = {
  "app.js": "dist/app.js",
  "app.css": "dist/app.css",
  "favicon.svg": "favicon.svg",
};

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; " +
  "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; " +
  "base-uri 'none'; form-action 'self'; object-src 'none'";

const SECURITY_HEADERS = {
  "content-security-policy": CSP,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Moonbase</title>
<p>The dashboard is not built. Run <code>deno task build</code> (or start the
server with <code>deno task start</code>, which builds it).</p>`;

/** Reads dashboard files once per process (they never change at run time). */
class DashboardFiles {
  #cache = new Map<string, Promise<Uint8Array<ArrayBuffer> | undefined>>();

  read(file: string): Promise<Uint8Array<ArrayBuffer> | undefined> {
    let hit = this.#cache.get(file);
    if (!hit) {
      hit = Deno.readFile(new URL(`../dashboard/${file}`, import.meta.url))
        // A file the build did not make: the route answers 404.
        .catch(() => undefined);
      this.#cache.set(file, hit);
    }
    return hit;
  }
}

/** Registers the dashboard routes. */
export function dashboardRoutes(r: RouteTarget<unknown>): void {
  const files = new DashboardFiles();
  const page = async (): Promise<Response> => {
    const [html, js] = await Promise.all([
      files.read("index.html"),
      files.read("dist/app.js"),
    ]);
    const body = html && js ? html : new TextEncoder().encode(NOT_BUILT);
    return new Response(body, {
      status: html && js ? 200 : 503,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-cache",
        ...SECURITY_HEADERS,
      },
    });
  };
  r.add("GET", "/mb", page);
  r.add("GET", "/mb/*", page);
  r.add("GET", "/mb/assets/:name", async (ctx) => {
    const asset = Object.hasOwn(ASSETS, ctx.params.name)
      ? ASSETS[ctx.params.name]
      : undefined;
    const body = asset && await files.read(asset);
    if (!asset || !body) {
      return new Response("Not found", {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    return new Response(body, {
      headers: {
        "content-type": contentTypeOf(asset),
        "cache-control": "no-cache",
        ...SECURITY_HEADERS,
      },
    });
  });
}
