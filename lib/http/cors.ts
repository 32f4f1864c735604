/**
 * CORS with an origin allowlist (`*` allows any origin) and preflight.
 *
 * @module
 */

const ALLOW_HEADERS =
  "Authorization, Content-Type, X-Request-Id, Range, If-None-Match";
const EXPOSE_HEADERS =
  "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Content-Range, ETag";

/**
 * Decides CORS headers for a request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Cors } from "moonbase/lib/http/cors.ts";
 * const cors = new Cors(["https://app.example"]);
 * const req = new Request("http://x/", { headers: { origin: "https://app.example" } });
 * assert.ok(cors.headers(req)?.["access-control-allow-origin"] === "https://app.example");
 * assert.ok(cors.headers(new Request("http://x/", { headers: { origin: "https://evil" } })) === undefined);
 * ```
 */
export class Cors {
  #any: boolean;
  #origins: Set<string>;

  /** `origins` is the allowlist; `["*"]` allows every origin. */
  constructor(origins: string[]) {
    this.#any = origins.includes("*");
    this.#origins = new Set(origins.map((o) => o.replace(/\/$/, "")));
  }

  /** Headers to add, or undefined when the origin is not allowed (or absent). */
  headers(req: Request): Record<string, string> | undefined {
    const origin = req.headers.get("origin");
    if (!origin) return undefined;
    if (this.#any) {
      return {
        "access-control-allow-origin": "*",
        "access-control-expose-headers": EXPOSE_HEADERS,
      };
    }
    if (!this.#origins.has(origin)) return undefined;
    return {
      "access-control-allow-origin": origin,
      "access-control-expose-headers": EXPOSE_HEADERS,
      vary: "Origin",
    };
  }

  /** The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`). */
  preflight(req: Request): Response {
    const base = this.headers(req);
    if (!base) {
      return new Response(null, { status: 204, headers: { vary: "Origin" } });
    }
    return new Response(null, {
      status: 204,
      headers: {
        ...base,
        "access-control-allow-methods":
          "GET, HEAD, POST, PATCH, DELETE, OPTIONS",
        "access-control-allow-headers": ALLOW_HEADERS,
        "access-control-max-age": "600",
      },
    });
  }
}
