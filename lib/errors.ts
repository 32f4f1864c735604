/**
 * Domain errors thrown by the inner layers. The HTTP layer maps each `code`
 * to a status in exactly one place (`lib/http/envelope.ts`).
 *
 * @module
 */

/** What went wrong, independent of any transport. */
export type ErrorCode =
  | "invalid"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "too_large"
  | "timeout"
  | "unsupported_media_type"
  | "rate_limited"
  | "unavailable"
  | "insufficient_storage"
  /** A server Moonbase relies on (SMTP) refused or could not be reached. */
  | "bad_gateway";

/** Per-field validation detail: `{name: {code, message}}`. */
export type FieldErrors = Record<string, { code: string; message: string }>;

/**
 * An error the client caused or may see. Its message is safe to return.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MoonbaseError } from "moonbase/lib/errors.ts";
 * const e = new MoonbaseError("not_found", "Cannot find record: no such id");
 * assert.ok(e.code === "not_found");
 * ```
 */
export class MoonbaseError extends Error {
  /** The kind of failure. */
  readonly code: ErrorCode;
  /** Extra data returned in the envelope's `data` (e.g. `{fields}`). */
  readonly data: Record<string, unknown> | null;
  /** Extra response headers (e.g. `Allow`, `Retry-After`). */
  readonly headers: Record<string, string>;
  /** A status an extension chose (`app.error(status, message)`); else by `code`. */
  readonly status?: number;

  /** Creates an error with a client-safe message. */
  constructor(
    code: ErrorCode,
    message: string,
    data: Record<string, unknown> | null = null,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "MoonbaseError";
    this.code = code;
    this.data = data;
    this.headers = headers;
  }

  /**
   * An error with the status an extension script chose (400–599; anything
   * else is a 500), e.g. `app.error(422, "Cannot publish: no title")`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { MoonbaseError } from "moonbase/lib/errors.ts";
   * const e = MoonbaseError.withStatus(422, "Cannot publish: no title");
   * assert.deepEqual([e.status, e.code, e.message], [422, "invalid", "Cannot publish: no title"]);
   * assert.equal(MoonbaseError.withStatus(200, "x").status, 500);
   * ```
   */
  static withStatus(
    status: number,
    message: string,
    data: Record<string, unknown> | null = null,
    headers: Record<string, string> = {},
  ): MoonbaseError {
    const s = Number.isInteger(status) && status >= 400 && status <= 599
      ? status
      : 500;
    const code = CODE_OF[s] ?? (s < 500 ? "invalid" : "unavailable");
    const err = new MoonbaseError(code, String(message), data, headers);
    (err as { status?: number }).status = s;
    return err;
  }

  /**
   * This error with more response headers (e.g. the `X-RateLimit-*` of a
   * sign-up that failed for another reason); its status stays.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { MoonbaseError } from "moonbase/lib/errors.ts";
   * const e = MoonbaseError.withStatus(422, "Cannot publish: no title").withHeaders({ "X-A": "1" });
   * assert.deepEqual([e.status, e.headers], [422, { "X-A": "1" }]);
   * ```
   */
  withHeaders(headers: Record<string, string>): MoonbaseError {
    const err = new MoonbaseError(this.code, this.message, this.data, {
      ...this.headers,
      ...headers,
    });
    if (this.status !== undefined) {
      (err as { status?: number }).status = this.status;
    }
    return err;
  }
}

const CODE_OF: Record<number, ErrorCode> = {
  400: "invalid",
  401: "unauthenticated",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "timeout",
  409: "conflict",
  413: "too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  502: "bad_gateway",
  503: "unavailable",
  507: "insufficient_storage",
};

/**
 * A validation failure with per-field details (400).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { invalidFields } from "moonbase/lib/errors.ts";
 * const e = invalidFields({ title: { code: "required", message: "Missing required value" } });
 * assert.ok(e.code === "invalid");
 * ```
 */
export function invalidFields(
  fields: FieldErrors,
  message = "Cannot accept record: invalid fields",
): MoonbaseError {
  const names = Object.keys(fields).join(", ");
  return new MoonbaseError("invalid", `${message} (${names})`, { fields });
}

/**
 * The database cannot be reached or opened. Its message may carry driver
 * details (for the operator); a client is only ever told "Cannot reach the
 * database", with a 503 and `Retry-After` (see `lib/http/envelope.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StorageUnavailableError } from "moonbase/lib/errors.ts";
 * const e = new StorageUnavailableError("Cannot reach PostgreSQL: refused");
 * assert.equal(e.retryAfter, 2);
 * ```
 */
export class StorageUnavailableError extends Error {
  /** Seconds a client should wait before retrying. */
  readonly retryAfter: number;

  /** Creates the error with a one-line reason. */
  constructor(message: string, retryAfter = 2) {
    super(message);
    this.name = "StorageUnavailableError";
    this.retryAfter = retryAfter;
  }
}

/**
 * The disk (or the database's size limit) is full: a write cannot be saved
 * (507 Insufficient Storage; nothing half-written is kept).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { diskFull } from "moonbase/lib/errors.ts";
 * assert.equal(diskFull().code, "insufficient_storage");
 * ```
 */
export function diskFull(): MoonbaseError {
  return new MoonbaseError(
    "insufficient_storage",
    "Cannot save: the server's disk is full; try again once space is freed",
  );
}
