/**
 * The request pipeline: request id → CORS/preflight → route (or public
 * files) → the one error-to-envelope mapping.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { Cors } from "./cors.ts";
import type { Handler } from "./context.ts";
import { errorResponse, errorText, json } from "./envelope.ts";
import { type HttpHost, RequestContext } from "./request_context.ts";
import type { Router } from "./router.ts";
import { compose, type HttpExtensions } from "./middleware.ts";
import { inRequest } from "./request_scope.ts";
import { serveStatic } from "./static.ts";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
// Generated request ids: a random tag and a counter. Process-wide on
// purpose: every app in the process draws from one sequence, so ids stay
// unique across apps too (nothing else is shared; a counter per handler
// would repeat ids between two apps of one process).
let seq = 0;
const prefix = crypto.randomUUID().slice(0, 8);

/**
 * The (still percent-encoded) path of an absolute request URL, without
 * query or fragment; cheaper than `new URL()` on every request.
 */
export function pathOf(href: string): string {
  const start = href.indexOf("/", href.indexOf("//") + 2);
  if (start < 0) return "/";
  let end = href.length;
  const q = href.indexOf("?", start), h = href.indexOf("#", start);
  if (q >= 0) end = q;
  if (h >= 0 && h < end) end = h;
  return href.slice(start, end);
}

export type { HttpHost } from "./request_context.ts";

/** Connection info as `Deno.serve` gives it (optional for in-process calls). */
export type ConnInfo = { remoteAddr?: { hostname?: string } } | undefined;

/** Something to report unexpected errors to. */
export type ErrorReporter = (
  err: unknown,
  ctx: { method: string; path: string; requestId: string },
) => void;

function clientIp(req: Request, info: ConnInfo, trustProxy: boolean): string {
  if (trustProxy) {
    const last = lastHop(req.headers.get("x-forwarded-for"));
    if (last) return last;
  }
  return info?.remoteAddr?.hostname ?? "unknown";
}

/** The last non-empty hop of an `X-Forwarded-For` list, trimmed. */
function lastHop(xff: string | null): string | undefined {
  if (!xff) return undefined;
  let end = xff.length;
  while (end > 0) {
    const comma = xff.lastIndexOf(",", end - 1);
    const hop = xff.slice(comma + 1, end).trim();
    if (hop) return hop;
    end = comma < 0 ? 0 : comma;
  }
  return undefined;
}

/**
 * Builds the `Deno.serve` handler for a core and a router.
 *
 * @example
 * ```ts ignore
 * const handler = createHandler(core, router, console.error);
 * Deno.serve({ port: 7070 }, handler);
 * ```
 */
export function createHandler<A extends HttpHost>(
  core: A,
  router: Router<Handler<A>>,
  report: ErrorReporter,
  life: Lifecycle = { inFlight: 0, draining: false },
  extensions?: () => HttpExtensions<A> | undefined,
): (req: Request, info?: ConnInfo) => Promise<Response> {
  const cors = new Cors(core.config.corsOrigins);
  return async function handle(req, info) {
    if (life.draining) {
      return json(
        503,
        null,
        { connection: "close", "retry-after": "1" },
        "Server is stopping",
      );
    }
    life.inFlight++;
    try {
      return await answer(req, info);
    } finally {
      if (--life.inFlight === 0) life.idle?.();
    }
  };

  async function answer(req: Request, info: ConnInfo): Promise<Response> {
    const given = req.headers.get("x-request-id");
    const requestId = given && REQUEST_ID.test(given)
      ? given
      : `${prefix}-${(++seq).toString(36)}`;
    let res: Response;
    const started = performance.now();
    const path = pathOf(req.url);
    const ip = clientIp(req, info, core.config.trustProxy);
    // Read before dispatch: after a WebSocket upgrade the request is gone.
    const extra = cors.headers(req);
    const ctx = new RequestContext(req, {}, core, requestId, ip, extra);
    const fail = (err: unknown) => {
      ctx.error = errorText(err);
      return errorResponse(
        err,
        (e) => report(e, { method: req.method, path, requestId }),
      );
    };
    // Script middleware may rewrite any answer's headers: the pipeline's
    // own (request id, CORS) are then set again afterwards.
    let wrapped = false;
    if (
      req.method === "OPTIONS" &&
      req.headers.has("access-control-request-method")
    ) {
      res = cors.preflight(req);
    } else {
      try {
        const ext = extensions?.();
        if (ext && ext.middleware.length > 0) {
          wrapped = true;
          // Middleware see every answer, errors included, as a Response.
          const chain = () =>
            compose(ext.middleware, ctx, async () => {
              try {
                return await dispatch(ctx, router, ext.routes, path);
              } catch (err) {
                return fail(err);
              }
            });
          res = await (ext.scoped ? inRequest(ctx, chain) : chain());
        } else if (ext?.scoped) {
          res = await inRequest(
            ctx,
            () => dispatch(ctx, router, ext.routes, path),
          );
        } else res = await dispatch(ctx, router, ext?.routes, path);
      } catch (err) {
        res = fail(err);
      }
    }
    // An upgrade must answer with the very response the upgrade made.
    // `ctx.json` made it with those headers already (a WeakSet of such
    // responses would cost more at each garbage collection than it saves),
    // unless middleware had it in hand.
    if (res.status !== 101 && (wrapped || res !== ctx.made)) {
      res = stamp(res, requestId, extra);
    }
    const status = res.status;
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : "info";
    if (
      core.log.enabled(level) &&
      (status >= 400 || core.config.logDashboard || !ctx.builtinRoute ||
        !dashboardOwn(req.method, path, requestId))
    ) {
      core.log.request(
        level,
        req.method,
        path.length > 500 ? path.slice(0, 500) : path,
        status,
        Math.round((performance.now() - started) * 100) / 100,
        ip,
        ctx.seen?.id || null,
        ctx.seen?.entity || null,
        requestId,
        status >= 400 ? ctx.error ?? PHRASES[status] ?? `HTTP ${status}` : null,
      );
    }
    if (req.method === "HEAD" && res.body) {
      // HEAD sends no body: a body that cannot be cancelled is dropped anyway.
      await res.body.cancel().catch(() => {});
      res = new Response(null, { status: res.status, headers: res.headers });
    }
    return res;
  }
}

/**
 * What the log says of an error answer that carried no envelope (a bare
 * status from a file range, a dashboard asset, an extension's Response).
 */
const PHRASES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  416: "Range Not Satisfiable",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** The request id prefix of the dashboard's background requests (its logs page's polls). */
const DASHBOARD_POLL = "mbtail-";

/**
 * True for a request the dashboard makes of itself: its pages and assets
 * (`GET /mb…`), and its logs page's polls (`GET /api/v1/sys/logs…` tagged
 * with its request id prefix). Answered without an error by the built-in
 * route, they are left out of the request log unless `logDashboard` is set:
 * an open logs page would otherwise fill the log with its own polling. A tag
 * alone hides nothing else (other paths, errors, a script's route or
 * middleware answering under `/mb`), so a client cannot use it to go
 * unlogged.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dashboardOwn } from "moonbase/lib/http/handler.ts";
 * assert.ok(dashboardOwn("GET", "/mb/assets/app.js", "x"));
 * assert.ok(dashboardOwn("GET", "/api/v1/sys/logs/stats", "mbtail-ab12-3"));
 * assert.ok(!dashboardOwn("GET", "/api/v1/sys/logs", "x"));
 * assert.ok(!dashboardOwn("GET", "/api/v1/entities/posts", "mbtail-ab12-3"));
 * assert.ok(!dashboardOwn("POST", "/mb/x", "x"));
 * ```
 */
export function dashboardOwn(
  method: string,
  path: string,
  requestId: string,
): boolean {
  if (method !== "GET" && method !== "HEAD") return false;
  if (path === "/mb" || path.startsWith("/mb/")) return true;
  return requestId.startsWith(DASHBOARD_POLL) &&
    (path === "/api/v1/sys/logs" || path.startsWith("/api/v1/sys/logs/"));
}

/** Adds the request id, `nosniff` and CORS headers to a finished response. */
function stamp(
  res: Response,
  requestId: string,
  extra: Record<string, string> | undefined,
): Response {
  try {
    res.headers.set("x-request-id", requestId);
    if (!res.headers.has("x-content-type-options")) {
      res.headers.set("x-content-type-options", "nosniff");
    }
    if (extra) {
      for (const [k, v] of Object.entries(extra)) res.headers.set(k, v);
    }
  } catch {
    // Immutable headers (e.g. a Response from fetch): copy.
    res = new Response(res.body, res);
    res.headers.set("x-request-id", requestId);
    if (extra) {
      for (const [k, v] of Object.entries(extra)) res.headers.set(k, v);
    }
  }
  return res;
}

/** In-flight requests and the draining flag of a stopping server. */
export interface Lifecycle {
  inFlight: number;
  draining: boolean;
  /** Called when the last in-flight request is done. */
  idle?: () => void;
}

function dispatch<A extends HttpHost>(
  ctx: RequestContext<A>,
  router: Router<Handler<A>>,
  extra: Router<Handler<A>> | undefined,
  path: string,
): Promise<Response> | Response {
  const { req, app: core } = ctx;
  // An extension route answers its own method only, and only where it is
  // more specific than the built-in route that matches (a script's
  // `GET /*` never takes `/api/v1/health`; its `GET /api/v1/entities/things`
  // does take that one path from `GET /api/v1/entities/:entity`).
  const own = extra?.match(req.method, path);
  const builtin = router.match(req.method, path);
  const match = own?.kind === "found" &&
      (builtin.kind !== "found" || own.specificity > builtin.specificity)
    ? own
    : builtin;
  if (match.kind === "found") {
    core.writePause?.check(req.method);
    ctx.params = match.params;
    // A script's route under /mb is no dashboard request: it is logged.
    ctx.builtinRoute = match === builtin;
    return match.handler(ctx);
  }
  if (match.kind === "not_found" && own?.kind === "method_not_allowed") {
    throw new MoonbaseError(
      "method_not_allowed",
      `Cannot ${req.method} ${path.slice(0, 200)}: method not allowed`,
      null,
      { Allow: own.allow.join(", ") },
    );
  }
  if (match.kind === "method_not_allowed") {
    throw new MoonbaseError(
      "method_not_allowed",
      `Cannot ${req.method} ${path.slice(0, 200)}: method not allowed`,
      null,
      {
        Allow: match.allow.join(", "),
      },
    );
  }
  if (
    (req.method === "GET" || req.method === "HEAD") && core.config.publicDir &&
    !path.startsWith("/api/")
  ) {
    return serveStatic(core.config.publicDir, req, path).then((res) => {
      if (res) return res;
      throw new MoonbaseError("not_found", "Route Not Found");
    });
  }
  throw new MoonbaseError("not_found", "Route Not Found");
}
