/**
 * The one JSON envelope `{status, data, error}` and the one place where
 * errors become HTTP statuses.
 *
 * @module
 */

import {
  type ErrorCode,
  MoonbaseError,
  StorageUnavailableError,
} from "../errors.ts";

const STATUS: Record<ErrorCode, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  timeout: 408,
  conflict: 409,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  insufficient_storage: 507,
  bad_gateway: 502,
};

/** The content type of every JSON envelope. */
export const JSON_TYPE = "application/json; charset=utf-8";
const BASE_HEADERS = {
  "content-type": JSON_TYPE,
  "x-content-type-options": "nosniff",
};

/**
 * A JSON envelope response; `error` is `""` on success.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { json } from "moonbase/lib/http/envelope.ts";
 * const res = json(200, { ok: true });
 * assert.ok((await res.json()).data.ok === true);
 * ```
 */
export function json(
  status: number,
  data: unknown,
  headers?: HeadersInit,
  error = "",
): Response {
  const body = JSON.stringify({ status, data: data ?? null, error });
  if (headers === undefined) {
    return new Response(body, { status, headers: BASE_HEADERS });
  }
  const h = new Headers(headers);
  h.set("content-type", JSON_TYPE);
  h.set("x-content-type-options", "nosniff");
  return new Response(body, { status, headers: h });
}

/**
 * An empty 204 response.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { noContent } from "moonbase/lib/http/envelope.ts";
 * assert.ok(noContent().status === 204);
 * ```
 */
export function noContent(): Response {
  return new Response(null, { status: 204 });
}

/**
 * Maps any thrown value to an envelope response. Unknown errors become a
 * plain 500 and are passed to `report` (never to the client).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorResponse } from "moonbase/lib/http/envelope.ts";
 * import { MoonbaseError } from "moonbase/lib/errors.ts";
 * const res = errorResponse(new MoonbaseError("conflict", "Cannot create record: duplicate"));
 * assert.ok(res.status === 409);
 * ```
 */
export function errorResponse(
  err: unknown,
  report: (err: unknown) => void = () => {},
): Response {
  const e = errorEnvelope(err);
  if (!e) {
    report(err);
    return json(500, null, undefined, INTERNAL);
  }
  return json(e.status, e.data, e.headers, e.error);
}

/** An error as its answer: the envelope's three keys and the headers. */
export interface ErrorEnvelope {
  status: number;
  data: Record<string, unknown> | null;
  error: string;
  headers: Record<string, string> | undefined;
}

/**
 * What `errorResponse` answers for `err`, as values (a batch nests one
 * request's answer in its own); undefined for an unknown error (a 500,
 * to be reported).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorEnvelope } from "moonbase/lib/http/envelope.ts";
 * import { MoonbaseError } from "moonbase/lib/errors.ts";
 * const e = errorEnvelope(new MoonbaseError("conflict", "Cannot create record: duplicate"));
 * assert.deepEqual([e?.status, e?.error], [409, "Cannot create record: duplicate"]);
 * assert.equal(errorEnvelope(new Error("SELECT secret")), undefined);
 * ```
 */
export function errorEnvelope(err: unknown): ErrorEnvelope | undefined {
  if (err instanceof MoonbaseError) {
    return {
      status: err.status ?? STATUS[err.code],
      data: err.data,
      error: err.message,
      headers: err.headers,
    };
  }
  if (err instanceof StorageUnavailableError) {
    // The message may name hosts or driver details: the client gets a fixed one.
    return {
      status: 503,
      data: null,
      error: UNREACHABLE,
      headers: { "retry-after": String(err.retryAfter) },
    };
  }
  return undefined;
}

const UNREACHABLE = "Cannot reach the database: try again later";
const INTERNAL = "Internal Server Error";

/**
 * The `error` text `errorResponse` gives the client for `err` (what the
 * request log keeps).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorText } from "moonbase/lib/http/envelope.ts";
 * import { MoonbaseError } from "moonbase/lib/errors.ts";
 * assert.equal(errorText(new MoonbaseError("invalid", "Cannot x: y")), "Cannot x: y");
 * assert.equal(errorText(new Error("SELECT secret")), "Internal Server Error");
 * ```
 */
export function errorText(err: unknown): string {
  if (err instanceof MoonbaseError) return err.message;
  if (err instanceof StorageUnavailableError) return UNREACHABLE;
  return INTERNAL;
}

/** Maps a domain error code to its HTTP status. */
export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}
