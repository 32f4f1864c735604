/**
 * The request pipeline: request id → CORS/preflight → route (or public
 * files) → the one error-to-envelope mapping.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import type { AuthValue } from "../caller.ts";
import { Cors } from "./cors.ts";
import type { Context, Handler } from "./context.ts";
import { errorResponse, json } from "./envelope.ts";
import type { Router } from "./router.ts";
import { compose, type HttpExtensions } from "./middleware.ts";
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

/**
 * What the pipeline needs of an app (lib/core.ts's `Core` is one): its
 * HTTP settings, a request log and a way to resolve the caller. Named here
 * so that http does not import the app it serves.
 */
export interface HttpHost {
  readonly config: {
    readonly corsOrigins: string[];
    readonly trustProxy: boolean;
    readonly publicDir?: string;
  };
  readonly log: {
    enabled(level: "info" | "warn" | "error"): boolean;
    request(
      level: "info" | "warn" | "error",
      method: string,
      path: string,
      status: number,
      durationMs: number,
      ip: string | null,
      userId: string | null,
      entity: string | null,
      requestId: string,
    ): void;
  };
  readonly sessions: {
    resolve(header: string | null): Promise<AuthValue>;
  };
}

/** Connection info as `Deno.serve` gives it (optional for in-process calls). */
export type ConnInfo = { remoteAddr?: { hostname?: string } } | undefined;

/** Something to report unexpected errors to. */
export type ErrorReporter = (
  err: unknown,
  ctx: { method: string; path: string; requestId: string },
) => void;

function clientIp(req: Request, info: ConnInfo, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers.get("x-forwarded-for");
    const last = xff?.split(",").map((s) => s.trim()).filter(Boolean).pop();
    if (last) return last;
  }
  return info?.remoteAddr?.hostname ?? "unknown";
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
  return async (req, info) => {
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
      return await handle(req, info);
    } finally {
      if (--life.inFlight === 0) life.idle?.();
    }
  };

  async function handle(req: Request, info: ConnInfo): Promise<Response> {
    const given = req.headers.get("x-request-id");
    const requestId = given && REQUEST_ID.test(given)
      ? given
      : `${prefix}-${(++seq).toString(36)}`;
    let res: Response;
    const started = performance.now();
    const path = pathOf(req.url);
    const seen: { ctx?: RequestContext<A> } = {};
    const ip = clientIp(req, info, core.config.trustProxy);
    // Read before dispatch: after a WebSocket upgrade the request is gone.
    const extra = cors.headers(req);
    if (
      req.method === "OPTIONS" &&
      req.headers.has("access-control-request-method")
    ) {
      res = cors.preflight(req);
    } else {
      try {
        const ext = extensions?.();
        const go = () =>
          dispatch(core, router, ext?.routes, req, path, requestId, ip, seen);
        if (ext && ext.middleware.length > 0) {
          seen.ctx = new RequestContext(req, {}, core, requestId, ip);
          // Middleware see every answer, errors included, as a Response.
          const answer = () =>
            go().catch((err) =>
              errorResponse(
                err,
                (e) => report(e, { method: req.method, path, requestId }),
              )
            );
          res = await compose(ext.middleware, seen.ctx, answer);
        } else res = await go();
      } catch (err) {
        res = errorResponse(
          err,
          (e) => report(e, { method: req.method, path, requestId }),
        );
      }
    }
    // An upgrade must answer with the very response the upgrade made.
    if (res.status !== 101) {
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
    }
    const status = res.status;
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : "info";
    if (core.log.enabled(level)) {
      core.log.request(
        level,
        req.method,
        path.slice(0, 500),
        status,
        Math.round((performance.now() - started) * 100) / 100,
        ip,
        seen.ctx?.seen?.id || null,
        seen.ctx?.seen?.entity || null,
        requestId,
      );
    }
    if (req.method === "HEAD" && res.body) {
      await res.body.cancel().catch(() => {});
      res = new Response(null, { status: res.status, headers: res.headers });
    }
    return res;
  }
}

/** In-flight requests and the draining flag of a stopping server. */
export interface Lifecycle {
  inFlight: number;
  draining: boolean;
  /** Called when the last in-flight request is done. */
  idle?: () => void;
}

/**
 * The context of one request: a class, so its lazy parts (URL, caller) cost
 * no closures per request. It also remembers the caller for the log entry.
 */
class RequestContext<A extends HttpHost> implements Context<A> {
  readonly req: Request;
  /** Set once routing matched (middleware sees `{}` before). */
  params: Record<string, string>;
  readonly app: A;
  readonly requestId: string;
  readonly ip: string;
  /** The resolved caller, once `auth()` has run. */
  seen: AuthValue | undefined;
  #url: URL | undefined;
  #auth: Promise<AuthValue> | undefined;

  constructor(
    req: Request,
    params: Record<string, string>,
    app: A,
    requestId: string,
    ip: string,
  ) {
    this.req = req;
    this.params = params;
    this.app = app;
    this.requestId = requestId;
    this.ip = ip;
  }

  get url(): URL {
    return this.#url ??= new URL(this.req.url);
  }

  auth(): Promise<AuthValue> {
    return this.#auth ??= this.app.sessions.resolve(
      this.req.headers.get("authorization"),
    ).then((a) => this.seen = a);
  }
}

async function dispatch<A extends HttpHost>(
  core: A,
  router: Router<Handler<A>>,
  extra: Router<Handler<A>> | undefined,
  req: Request,
  path: string,
  requestId: string,
  ip: string,
  seen: { ctx?: RequestContext<A> },
): Promise<Response> {
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
    const ctx = seen.ctx ??= new RequestContext(
      req,
      match.params,
      core,
      requestId,
      ip,
    );
    ctx.params = match.params;
    return await match.handler(ctx);
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
    const res = await serveStatic(core.config.publicDir, req, path);
    if (res) return res;
  }
  throw new MoonbaseError("not_found", "Route Not Found");
}
