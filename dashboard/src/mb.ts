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
 * Every call goes through `send`, which words failures for people
 * (`plain_error.ts`): the server's message when it gave one, else a plain
 * sentence for the status; an aborted call rejects with a `DOMException`
 * named `AbortError` (as `fetch` does), so pages that catch `MoonbaseError`
 * to show it leave aborts (a page left, a newer request) alone.
 *
 * @module
 */

import {
  claimsOf,
  Moonbase,
  MoonbaseError,
  type SendOptions,
} from "../../client/mod.ts";
import { plainError } from "./plain_error.ts";

export { claimsOf, MoonbaseError };
export type {
  AdminRecord,
  AggregateQuery,
  BackupInfo,
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
