/**
 * The input of a batch (`POST /api/v1/batch`): `{"requests": [{method, url,
 * body}, …]}` checked into calls, and the one shape of a batch's failure:
 * the failing request's status, `data: {index, response}`, and `error:
 * "Cannot run batch: request <index> failed: <its error>"`.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { errorEnvelope } from "../http/envelope.ts";

/** The methods a batch request may use (`PUT`: an upsert). */
export type BatchMethod = "POST" | "PATCH" | "DELETE" | "PUT";

/** One request of a batch, checked. */
export interface BatchCall {
  readonly method: BatchMethod;
  /** The entity's name, from the url. */
  readonly entity: string;
  /** The record's id: from the url (PATCH, DELETE), or the body's `id` (PUT). */
  readonly id?: string;
  readonly body: Record<string, unknown>;
}

const METHODS: ReadonlySet<string> = new Set([
  "POST",
  "PATCH",
  "DELETE",
  "PUT",
]);
const PREFIX = "/api/v1/entities/";
const KEYS: ReadonlySet<string> = new Set(["method", "url", "body"]);

/**
 * Request `index` failed with `err`: the batch fails with that request's
 * status and headers, and its answer nested (an unknown error stays itself:
 * a plain 500, reported, never shown).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MoonbaseError } from "moonbase/lib/errors.ts";
 * import { batchFailure } from "moonbase/lib/records/batch_input.ts";
 * const e = batchFailure(2, new MoonbaseError("forbidden", "Cannot add: denied")) as MoonbaseError;
 * assert.equal(e.message, "Cannot run batch: request 2 failed: Cannot add: denied");
 * assert.deepEqual(e.data, { index: 2, response: { status: 403, data: null, error: "Cannot add: denied" } });
 * ```
 */
export function batchFailure(index: number, err: unknown): unknown {
  const e = errorEnvelope(err);
  if (!e) return err;
  return MoonbaseError.withStatus(
    e.status,
    `Cannot run batch: request ${index} failed: ${e.error}`,
    { index, response: { status: e.status, data: e.data, error: e.error } },
    e.headers,
  );
}

function invalid(message: string): MoonbaseError {
  return new MoonbaseError("invalid", `Cannot run batch: ${message}`);
}

/** A problem with request `index` itself (400 in the failure shape). */
function badCall(index: number, message: string): unknown {
  return batchFailure(
    index,
    new MoonbaseError("invalid", `Cannot read request: ${message}`),
  );
}

/**
 * Checks a batch body into its calls: `requests` an array of 1 to `max`
 * requests, each `{method, url, body?}` with a url
 * `/api/v1/entities/<entity>[/<id>]` that fits the method (`POST` and `PUT`
 * the entity, `PATCH` and `DELETE` a record; `PUT` with an `id` in the
 * body).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseBatch } from "moonbase/lib/records/batch_input.ts";
 * const calls = parseBatch({ requests: [
 *   { method: "POST", url: "/api/v1/entities/posts", body: { title: "a" } },
 *   { method: "DELETE", url: "/api/v1/entities/posts/p1" },
 * ] }, 100);
 * assert.deepEqual(calls[1], { method: "DELETE", entity: "posts", id: "p1", body: {} });
 * assert.throws(() => parseBatch({ requests: [] }, 100), /at least one request/);
 * ```
 */
export function parseBatch(
  input: Record<string, unknown>,
  max: number,
): BatchCall[] {
  for (const key of Object.keys(input)) {
    if (key !== "requests") {
      throw invalid(`unknown key ${JSON.stringify(key.slice(0, 64))}`);
    }
  }
  const list = input.requests;
  if (!Array.isArray(list)) {
    throw invalid('"requests" must be an array of requests');
  }
  if (list.length === 0) throw invalid("send at least one request");
  if (list.length > max) {
    throw invalid(
      `${list.length} requests; at most ${max} are allowed (--batchMaxRequests)`,
    );
  }
  return list.map((r, i) => parseCall(i, r));
}

function parseCall(index: number, r: unknown): BatchCall {
  if (r === null || typeof r !== "object" || Array.isArray(r)) {
    throw badCall(index, "expected an object {method, url, body}");
  }
  const o = r as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KEYS.has(key)) {
      throw badCall(index, `unknown key ${JSON.stringify(key.slice(0, 64))}`);
    }
  }
  const method = typeof o.method === "string" ? o.method.toUpperCase() : "";
  if (!METHODS.has(method)) {
    throw badCall(index, "method must be POST, PATCH, DELETE or PUT");
  }
  const body = o.body ?? {};
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw badCall(index, "body must be a JSON object");
  }
  const url = typeof o.url === "string" ? o.url : "";
  if (!url.startsWith(PREFIX) || /[?#]/.test(url)) {
    throw badCall(
      index,
      "url must be /api/v1/entities/<entity> or /api/v1/entities/<entity>/<id>, without a query",
    );
  }
  const parts = url.slice(PREFIX.length).split("/");
  if (parts.length > 2 || parts.some((p) => p === "")) {
    throw badCall(index, `no such url ${JSON.stringify(url.slice(0, 200))}`);
  }
  let entity: string, id: string | undefined;
  try {
    [entity, id] = parts.map(decodeURIComponent);
  } catch {
    throw badCall(index, "the url is not valid percent-encoding");
  }
  const b = body as Record<string, unknown>;
  const m = method as BatchMethod;
  if (m === "POST" || m === "PUT") {
    if (id !== undefined) {
      throw badCall(
        index,
        `${m} takes /api/v1/entities/<entity>, without an id`,
      );
    }
    if (m === "PUT") {
      if (typeof b.id !== "string" || b.id === "") {
        throw badCall(
          index,
          "PUT (an upsert) needs the record's id in its body",
        );
      }
      id = b.id;
    }
  } else if (id === undefined) {
    throw badCall(index, `${m} takes /api/v1/entities/<entity>/<id>`);
  }
  return id === undefined
    ? { method: m, entity, body: b }
    : { method: m, entity, id, body: b };
}
