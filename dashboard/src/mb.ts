/// <reference lib="dom" />
/**
 * The dashboard's one client: a `Moonbase` of `@moonbase/client` (the
 * package in `client/`, bundled from its sources) on this page's origin,
 * its token and admin in `localStorage` under `mb_admin_session` (the
 * `{token, user}` the dashboard always stored there, so sessions survive
 * an upgrade), refreshed before expiry by the client, one refresh across
 * tabs. Pages call its services (`mb.schemas`, `mb.entity(name)`,
 * `mb.logs`, …) or, for the few admin routes it has no method for,
 * `mb.send`.
 *
 * Every call goes through `send`, which words failures for people: the
 * server's message when it gave one, else a plain sentence for the status;
 * an aborted call rejects with a `DOMException` named `AbortError` (as
 * `fetch` does), so pages that catch `MoonbaseError` to show it leave
 * aborts (a page left, a newer request) alone.
 *
 * @module
 */

import {
  claimsOf,
  Moonbase,
  MoonbaseError,
  type SendOptions,
} from "../../client/mod.ts";

export { claimsOf, MoonbaseError };
export type {
  AdminRecord,
  AggregateQuery,
  ListQuery,
  Page,
  RealtimeEvent,
  RecordModel,
} from "../../client/mod.ts";

/** A stored record as pages handle it (the times may be left out by `fields`). */
export type RecordData = Record<string, unknown> & {
  id: string;
  created?: string;
  updated?: string;
};

/** The `localStorage` key of the admin session. */
export const SESSION_KEY = "mb_admin_session";

/** A status in plain words, for an answer that brought no message of its own. */
export function plainStatus(status: number): string {
  if (status === 401) return "Your session has ended: please log in again.";
  if (status === 403) return "Only admins may do this.";
  if (status === 404) return "Not found.";
  if (status === 413) return "The request is too large.";
  if (status === 429) return "Too many attempts: wait a minute and retry.";
  if (status === 503) return "The server or its database is unavailable.";
  if (status === 507) return "The server's disk is full: nothing was saved.";
  return `The server answered ${status}.`;
}

/**
 * The error a page gets for a failed call `what` (`"GET /api/v1/…"`): an
 * abort as an `AbortError`; a call that got no answer, or an answer
 * without the server's message (a proxy's page), in plain words; else the
 * error as the client made it (the server's message, fields and data).
 */
export function plainError(err: unknown, what: string): unknown {
  if (!(err instanceof MoonbaseError)) return err;
  if (err.isAbort) return new DOMException(err.message, "AbortError");
  const bare = err.status === 0 ||
    err.message.startsWith(`Cannot ${what}: the server answered ${err.status}`);
  if (!bare) return err;
  return new MoonbaseError(
    err.status,
    err.status === 0
      ? "Cannot reach the server: check your connection."
      : plainStatus(err.status),
    {
      fields: err.fields,
      data: err.data,
      retryAfter: err.retryAfter,
      cause: err,
    },
  );
}

/** The client with the dashboard's wording of errors. */
class DashboardClient extends Moonbase {
  override async send<T = unknown>(
    method: string,
    path: string,
    options?: SendOptions,
  ): Promise<T> {
    try {
      return await super.send<T>(method, path, options);
    } catch (err) {
      throw plainError(err, `${method} ${path}`);
    }
  }
}

/** The one client of this page. */
export const mb: Moonbase = new DashboardClient("", {
  store: "local",
  storageKey: SESSION_KEY,
});

/** Encodes one path segment (entity names, ids) of an `mb.send` path. */
export const seg = (s: string): string => encodeURIComponent(s);
