/**
 * The per-request context handed to route handlers; `auth()` is resolved
 * lazily, once.
 *
 * @module
 */

import type { AuthValue } from "../caller.ts";

/** A route handler. */
export type Handler<A> = (ctx: Context<A>) => Promise<Response> | Response;

/** Request context. */
export interface Context<A> {
  readonly req: Request;
  readonly url: URL;
  /** The URL's query parameters (a URL without `?` is not parsed for them). */
  readonly query: URLSearchParams;
  readonly params: Record<string, string>;
  readonly app: A;
  readonly requestId: string;
  /** Client IP: the socket peer, or the last `X-Forwarded-For` hop with `--trustProxy`. */
  readonly ip: string;
  /** The caller (guest when no token; 401 on a bad token). */
  auth(): Promise<AuthValue>;
  /**
   * The body as a JSON object (`application/json`), within the app's size
   * limit and body deadlines: 415, 413, 408 or 400 otherwise.
   */
  body(): Promise<Record<string, unknown>>;
  /**
   * The JSON envelope `{status, data, error}` (as `json()` of
   * lib/http/envelope.ts), built with this request's id and CORS headers
   * from the start: cheaper than the pipeline adding them afterwards.
   */
  json(
    status: number,
    data: unknown,
    headers?: Record<string, string>,
    error?: string,
  ): Response;
}
