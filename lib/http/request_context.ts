/**
 * What the pipeline needs of an app (`HttpHost`) and the context of one
 * request (`RequestContext`): lazy URL and caller, `body()`, and `json()`,
 * which builds envelopes with the request's headers at once.
 *
 * @module
 */

import type { WritePause } from "./write_pause.ts";
import { type AuthValue, GUEST } from "../caller.ts";
import type { Context } from "./context.ts";
import { JSON_TYPE } from "./envelope.ts";
import { readJsonObject } from "./body.ts";
import type { BodyDeadlines } from "./deadlines.ts";

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
    /** Log the dashboard's own page, asset and polling requests too. */
    readonly logDashboard?: boolean;
    /** The largest request body `ctx.body()` reads (bytes). */
    readonly maxBodySize: number;
  };
  /** The request-body reads in progress and their time limits. */
  readonly bodies?: BodyDeadlines;
  /** Write requests answer 503 while this is paused (a restore). */
  readonly writePause?: WritePause;
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
      error?: string | null,
    ): void;
  };
  readonly sessions: {
    resolve(header: string | null): Promise<AuthValue>;
  };
}

/** The guest caller, already resolved (shared: it is frozen). */
const GUEST_NOW: Promise<AuthValue> = Promise.resolve(GUEST);

/**
 * The context of one request: a class, so its lazy parts (URL, caller) cost
 * no closures per request. It also remembers the caller for the log entry.
 */
export class RequestContext<A extends HttpHost> implements Context<A> {
  readonly req: Request;
  /** Set once routing matched (middleware sees `{}` before). */
  params: Record<string, string>;
  readonly app: A;
  readonly requestId: string;
  readonly ip: string;
  /** The resolved caller, once `auth()` has run. */
  seen: AuthValue | undefined;
  /** The error text the client was answered with (for the request log). */
  error: string | undefined;
  /** A built-in route answered (not a script's route or middleware). */
  builtinRoute = false;
  /**
   * The last response `json()` made: it carries the request id and CORS
   * headers from the start, so the pipeline leaves its headers alone.
   */
  made: Response | undefined;
  #url: URL | undefined;
  #auth: Promise<AuthValue> | undefined;
  readonly #cors: Record<string, string> | undefined;

  constructor(
    req: Request,
    params: Record<string, string>,
    app: A,
    requestId: string,
    ip: string,
    cors: Record<string, string> | undefined,
  ) {
    this.req = req;
    this.params = params;
    this.app = app;
    this.requestId = requestId;
    this.ip = ip;
    this.#cors = cors;
  }

  json(
    status: number,
    data: unknown,
    headers?: Record<string, string>,
    error = "",
  ): Response {
    const body = JSON.stringify({ status, data: data ?? null, error });
    // A literal of three (the common case) is cheaper than spreading.
    const h: Record<string, string> =
      headers === undefined && this.#cors === undefined
        ? {
          "content-type": JSON_TYPE,
          "x-content-type-options": "nosniff",
          "x-request-id": this.requestId,
        }
        : {
          ...headers,
          ...this.#cors,
          "content-type": JSON_TYPE,
          "x-content-type-options": "nosniff",
          "x-request-id": this.requestId,
        };
    if (error !== "") this.error = error;
    return this.made = new Response(body, { status, headers: h });
  }

  get url(): URL {
    return this.#url ??= new URL(this.req.url);
  }

  /** The URL's query parameters; a URL without `?` is not parsed for them. */
  get query(): URLSearchParams {
    return this.#url || this.req.url.includes("?")
      ? this.url.searchParams
      : new URLSearchParams();
  }

  body(): Promise<Record<string, unknown>> {
    return readJsonObject(
      this.req,
      this.app.config.maxBodySize,
      this.app.bodies,
    );
  }

  auth(): Promise<AuthValue> {
    if (this.#auth) return this.#auth;
    const header = this.req.headers.get("authorization");
    if (header === null || header === "") {
      // A guest: no session to look up (resolve would say the same).
      this.seen = GUEST;
      return this.#auth = GUEST_NOW;
    }
    return this.#auth = this.app.sessions.resolve(header).then((a) =>
      this.seen = a
    );
  }
}
