/**
 * `{ as }`: record operations by entity name as a given caller, for the
 * library (`Entity.list(query, { as })` and the others), run by the record
 * service exactly as the HTTP API runs them.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { currentRequest } from "../http/request_scope.ts";
import type { CallerAccess } from "./entity_env.ts";
import type { RecordService, RecordWrite } from "./service.ts";

/**
 * The record service's operations as a given caller, by entity name: the
 * same rules, exposure, 404s and account checks as the HTTP API. Inside a
 * request (a script route) the sign-up throttle counts the request's client
 * address.
 */
export function callerAccess(service: RecordService): CallerAccess {
  const req = (
    method: string,
    body: Record<string, unknown> = {},
    query: Record<string, string> = {},
  ) => ({ body, query, method });
  const write = (body: Record<string, unknown>): RecordWrite => ({
    body,
    uploads: new Map(),
    cleanup: () => Promise.resolve(),
  });
  return {
    list: (name, query, auth) =>
      service.list(
        service.entity(name),
        query,
        auth,
        req("GET", {}, Object.fromEntries(query)),
      ),
    read: (name, id, auth) => {
      // An entity the API does not serve throws; a record the caller may
      // not see reads as undefined.
      const entity = service.entity(name);
      return service.get(entity, id, auth, req("GET")).catch((err) => {
        if (err instanceof MoonbaseError && err.code === "not_found") {
          return undefined;
        }
        throw err;
      });
    },
    create: (name, data, auth) =>
      service.create(
        service.entity(name),
        write(data),
        auth,
        req("POST", data),
        { origin: currentRequest() },
      ),
    update: (name, id, data, auth) =>
      service.update(
        service.entity(name),
        id,
        write(data),
        auth,
        req("PATCH", data),
        { origin: currentRequest() },
      ),
    remove: (name, id, auth) =>
      service.remove(service.entity(name), id, auth, req("DELETE")),
  };
}
