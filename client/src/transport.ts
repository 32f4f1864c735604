/**
 * One HTTP call to the API: the URL with its query, the token, the body,
 * and the envelope `{status, data, error}` unwrapped into `data` or a
 * `MoonbaseError`. The services (entities, auth, batch, …) call the API
 * only through a `Transport`.
 *
 * @module
 */

import type { AuthStore } from "./auth_store.ts";
import { type FieldError, MoonbaseError } from "./errors.ts";

/** A query parameter's value: arrays become comma lists, empty values are left out. */
export type QueryValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly string[];

/** Query parameters. */
export type Query = { [name: string]: QueryValue };

/** Options of one call. */
export interface SendOptions {
  /** Query parameters. */
  query?: Query;
  /** A JSON body, or a `FormData` (multipart). */
  body?: unknown;
  /** Aborts the call (it rejects with `isAbort`). */
  signal?: AbortSignal;
  /**
   * Which token to send: the store's (default), none, or a given one. A
   * call with the store's token refreshes it first when it is due.
   */
  auth?: "store" | "none" | { token: string };
  /** More request headers. */
  headers?: Record<string, string>;
}

/** What the services call the API through. */
export interface Transport {
  /** The server's base URL, without a trailing slash. */
  readonly baseUrl: string;
  /** Where the token lives. */
  readonly authStore: AuthStore;
  /** Calls the API; resolves to the envelope's `data` (`null` for 204). */
  send<T>(method: string, path: string, options?: SendOptions): Promise<T>;
  /** Calls the API; resolves to the response when it is a success (the body unread). */
  open(method: string, path: string, options?: SendOptions): Promise<Response>;
  /** The absolute URL of a path with its query. */
  url(path: string, query?: Query): string;
  /** The store's token, refreshed first when it is due (`""` when signed out). */
  freshToken(): Promise<string>;
  /**
   * The server refused `token` (401): the store forgets it if it still
   * holds it once another tab had its moment to store a successor.
   */
  refused(token: string): Promise<void>;
  /**
   * Resolves once this client's refresh calls in flight (if any) have their
   * answer: a refresh revokes the old token before its answer stores the
   * new one, so a 401 meanwhile may be the refresh's own doing.
   */
  refreshes(): Promise<void> | undefined;
  /** Keeps a login's answer in the store. */
  signIn<T extends { token: string; user: unknown }>(answer: T): T;
}

/** A query string (with its `?`), `""` when empty. */
export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "") continue;
    const text = Array.isArray(value) ? value.join(",") : String(value);
    if (text !== "") params.set(name, text);
  }
  const qs = params.toString();
  return qs === "" ? "" : `?${qs}`;
}

/** Encodes one path segment (an entity name, an id, a file name). */
export function seg(s: string): string {
  return encodeURIComponent(s);
}

/** A field value's files: a `Blob` (a `File`) or a non-empty array of them; else undefined. */
export function blobsOf(value: unknown): Blob[] | undefined {
  if (typeof Blob !== "function") return undefined;
  if (value instanceof Blob) return [value];
  if (
    Array.isArray(value) && value.length > 0 &&
    value.every((v) => v instanceof Blob)
  ) return value;
  return undefined;
}

/** A file's name for its part (`blob` when it has none). */
export function fileName(blob: Blob): string {
  const name = (blob as { name?: unknown }).name;
  return typeof name === "string" && name !== "" ? name : "blob";
}

/**
 * A record write as it goes: a `FormData` as it is; an object holding
 * files (`Blob`s) as multipart, its files as file parts and the other
 * values as one `@jsonPayload` part; anything else as JSON.
 */
export function writeBody(data: unknown): unknown {
  if (data instanceof FormData || data === null || typeof data !== "object") {
    return data;
  }
  const entries = Object.entries(data as Record<string, unknown>);
  if (!entries.some(([, v]) => blobsOf(v))) return data;
  const form = new FormData();
  const rest: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    const blobs = blobsOf(value);
    if (!blobs) rest[name] = value;
  }
  form.append("@jsonPayload", JSON.stringify(rest));
  for (const [name, value] of entries) {
    for (const blob of blobsOf(value) ?? []) {
      form.append(name, blob, fileName(blob));
    }
  }
  return form;
}

/** The request body and the headers it needs. */
export function encodeBody(
  body: unknown,
  headers: Record<string, string>,
): BodyInit | undefined {
  if (body === undefined) return undefined;
  if (body instanceof FormData) return body;
  headers["content-type"] = "application/json";
  return JSON.stringify(body);
}

function retryAfterOf(res: Response): number | undefined {
  const v = res.headers.get("retry-after");
  if (v === null) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** The error of a failed answer, from its envelope when it has one. */
export async function errorOf(
  res: Response,
  what: string,
): Promise<MoonbaseError> {
  let env: { data?: unknown; error?: unknown } | undefined;
  try {
    env = await res.json();
  } catch {
    // Not an envelope (a proxy's page, an empty body): the status says it.
  }
  const data = env?.data ?? null;
  const fields = (data as { fields?: Record<string, FieldError> } | null)
    ?.fields;
  const message = typeof env?.error === "string" && env.error !== ""
    ? env.error
    : `Cannot ${what}: the server answered ${res.status}${
      res.statusText ? ` ${res.statusText}` : ""
    }`;
  return new MoonbaseError(res.status, message, {
    fields: fields && typeof fields === "object" ? fields : {},
    data,
    retryAfter: retryAfterOf(res),
  });
}

/** The error of a call that got no answer. */
export function unreachable(err: unknown, url: string): MoonbaseError {
  if (err instanceof MoonbaseError) return err;
  const name = (err as { name?: unknown } | null)?.name;
  if (name === "AbortError" || name === "TimeoutError") {
    return new MoonbaseError(0, "The call was aborted", {
      isAbort: true,
      cause: err,
    });
  }
  const why = err instanceof Error ? err.message : String(err);
  return new MoonbaseError(
    0,
    `Cannot reach the server at ${url}: ${why}; check the URL and the connection`,
    { cause: err },
  );
}

/** Reads a successful answer's envelope `data` (`null` for 204 or an empty body). */
export async function dataOf<T>(res: Response, what: string): Promise<T> {
  if (res.status === 204) return null as T;
  const text = await res.text();
  if (text === "") return null as T;
  try {
    return (JSON.parse(text) as { data: T }).data;
  } catch (cause) {
    throw new MoonbaseError(
      res.status,
      `Cannot ${what}: the answer is not JSON`,
      { cause },
    );
  }
}
