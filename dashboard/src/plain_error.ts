/**
 * Failed calls in words for people: the server's own message when it gave
 * one, else a plain sentence for the status; an aborted call as the
 * `AbortError` `fetch` throws (pages leave those alone). Used by `mb.ts`
 * for every call of the dashboard's client.
 *
 * @module
 */

import { MoonbaseError } from "../../client/mod.ts";

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
