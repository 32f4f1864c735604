/**
 * The one error of the client: every failed call rejects with a
 * `MoonbaseError` carrying the HTTP status, the server's message and its
 * per-field errors.
 *
 * @module
 */

/** One field's error, from the envelope's `data.fields`. */
export interface FieldError {
  code: string;
  message: string;
}

/** What a `MoonbaseError` is made of besides its status and message. */
export interface MoonbaseErrorInit {
  /** Per-field errors (`data.fields`), keyed by field name. */
  fields?: Record<string, FieldError>;
  /** The envelope's `data` (e.g. `{mfa_id}`, a batch's `{index, response}`). */
  data?: unknown;
  /** The call was aborted (its `signal`, or the client's timeout). */
  isAbort?: boolean;
  /** Seconds the server asked to wait (`Retry-After`). */
  retryAfter?: number;
  /** The underlying error (a network failure). */
  cause?: unknown;
}

/**
 * A failed call. `status` is the HTTP status, or 0 when no answer came (the
 * server could not be reached, or the call was aborted: `isAbort`).
 *
 * @example
 * ```ts
 * import { MoonbaseError } from "./errors.ts";
 * const e = new MoonbaseError(400, "Cannot save record: title is required", {
 *   fields: { title: { code: "required", message: "Required" } },
 * });
 * if (e.status !== 400 || e.fields.title.code !== "required") throw new Error();
 * ```
 */
export class MoonbaseError extends Error {
  /** HTTP status; 0 when no answer came. */
  readonly status: number;
  /** Per-field errors, keyed by field name (`{}` when none). */
  readonly fields: Record<string, FieldError>;
  /** The envelope's `data`, `null` when none. */
  readonly data: unknown;
  /** True when the call was aborted rather than failed. */
  readonly isAbort: boolean;
  /** Seconds to wait before trying again (`Retry-After`), when the server said. */
  readonly retryAfter?: number;

  /** Creates an error; `message` is shown as it is. */
  constructor(status: number, message: string, init: MoonbaseErrorInit = {}) {
    super(
      message,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.name = "MoonbaseError";
    this.status = status;
    this.fields = init.fields ?? {};
    this.data = init.data ?? null;
    this.isAbort = init.isAbort ?? false;
    if (init.retryAfter !== undefined) this.retryAfter = init.retryAfter;
  }

  /**
   * The `mfa_id` of a first login that needs a second factor (a 401 whose
   * `data` carries it), else undefined.
   */
  get mfaId(): string | undefined {
    const d = this.data as { mfa_id?: unknown } | null;
    return typeof d?.mfa_id === "string" ? d.mfa_id : undefined;
  }
}
