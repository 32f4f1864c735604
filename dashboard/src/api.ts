/// <reference lib="dom" />
/**
 * The dashboard's API client: one `request()` that adds the admin token,
 * unwraps the envelope and turns every failure into an `ApiError` whose
 * message is fit to show as it is.
 *
 * @module
 */

import { session } from "./session/session.ts";

/** A field error from the envelope's `data.fields`. */
export interface FieldError {
  code: string;
  message: string;
}

/** A failed API call, in plain words. */
export class ApiError extends Error {
  /** HTTP status (0 when the server could not be reached). */
  readonly status: number;
  /** Per-field errors (`data.fields`), keyed by field name. */
  readonly fields: Record<string, FieldError>;
  /** The envelope's `data` of the error, when any. */
  readonly data: unknown;

  constructor(
    status: number,
    message: string,
    fields: Record<string, FieldError> = {},
    data: unknown = null,
  ) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.fields = fields;
    this.data = data;
  }
}

/** Options of one call. */
export interface RequestOptions {
  /** A JSON body, or a `FormData` for uploads. */
  body?: unknown;
  /** Query parameters (undefined and "" values are left out). */
  query?: Record<string, string | number | boolean | undefined>;
  /** Send no token (login, setup) and do not end the session on 401. */
  anonymous?: boolean;
  /** A token to send instead of the session's. */
  token?: string;
  signal?: AbortSignal;
}

/** The URL of an API path with its query. */
export function apiUrl(
  path: string,
  query: RequestOptions["query"] = {},
): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return `/api/v1${path}${qs ? "?" + qs : ""}`;
}

function plainStatus(status: number): string {
  if (status === 401) return "Your session has ended: please log in again.";
  if (status === 403) return "Only admins may do this.";
  if (status === 404) return "Not found.";
  if (status === 413) return "The request is too large.";
  if (status === 429) return "Too many attempts: wait a minute and retry.";
  if (status === 503) return "The server or its database is unavailable.";
  if (status === 507) return "The server's disk is full: nothing was saved.";
  return `The server answered ${status}.`;
}

/** Calls the API; resolves to the envelope's `data`. */
export async function request<T = unknown>(
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<T> {
  const headers: Record<string, string> = {};
  const token = opts.token ?? (opts.anonymous ? "" : session.token.value);
  if (token) headers.authorization = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(apiUrl(path, opts.query), {
      method,
      headers,
      body,
      signal: opts.signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "Cannot reach the server: check your connection.");
  }
  if (res.status === 204) return null as T;
  let env: { data?: unknown; error?: string } = {};
  try {
    env = await res.json();
  } catch (e) {
    // Aborted while reading: the caller cancelled, say so (not "no data").
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    // not an envelope: fall back to the status text below
  }
  if (!res.ok) {
    const data = env.data as { fields?: Record<string, FieldError> } | null;
    const err = new ApiError(
      res.status,
      env.error || plainStatus(res.status),
      data?.fields ?? {},
      env.data ?? null,
    );
    if (res.status === 401 && !opts.anonymous && !opts.token && token) {
      session.expire(token);
    }
    throw err;
  }
  return env.data as T;
}

/** Shorthands. */
export const api = {
  get: <T = unknown>(path: string, opts?: RequestOptions): Promise<T> =>
    request<T>("GET", path, opts),
  post: <T = unknown>(
    path: string,
    body?: unknown,
    opts?: RequestOptions,
  ): Promise<T> => request<T>("POST", path, { ...opts, body }),
  patch: <T = unknown>(
    path: string,
    body?: unknown,
    opts?: RequestOptions,
  ): Promise<T> => request<T>("PATCH", path, { ...opts, body }),
  del: (path: string, opts?: RequestOptions): Promise<unknown> =>
    request("DELETE", path, opts),
};

/** Encodes one path segment (entity names, ids). */
export const seg = (s: string): string => encodeURIComponent(s);

/** A list page as the API returns it. */
export interface Page<T> {
  items: T[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

/** A stored record. */
export type RecordData = Record<string, unknown> & {
  id: string;
  created?: string;
  updated?: string;
};
