/**
 * Where an API key is refused (lib/auth/api_keys.ts): a key is no session,
 * so it cannot log in, refresh, log out, impersonate or use the account
 * routes. Recognising a key's header is cheap: the JWT path asks on every
 * request.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";

const KEY_HEADER = /^Bearer\s+mbk_/i;

/**
 * True when an `Authorization` header carries an API key (cheap: the JWT
 * path runs it on every request).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isApiKeyHeader } from "moonbase/lib/auth/api_key_refusals.ts";
 * assert.ok(isApiKeyHeader("Bearer mbk_0123"));
 * assert.ok(!isApiKeyHeader("Bearer eyJhbGciOi"));
 * assert.ok(!isApiKeyHeader(null));
 * ```
 */
export function isApiKeyHeader(header: string | null): boolean {
  return header !== null && KEY_HEADER.test(header);
}

/** The one refusal of a key where it cannot be used. */
export function apiKeyRefused(action: string, hint: string): MoonbaseError {
  return new MoonbaseError(
    "forbidden",
    `Cannot ${action} with an API key: ${hint}`,
  );
}

/**
 * The refusal a route gives an API key, by its pattern (undefined: keys
 * are welcome). Refused: every route under `/api/v1/auth/` (log in,
 * refresh, log out, the account routes, impersonation) and the admins'
 * login, refresh and logout. A key is no session: it cannot make, extend
 * or end one, nor change the account it acts for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { apiKeyRefusal } from "moonbase/lib/auth/api_key_refusals.ts";
 * assert.match(apiKeyRefusal("/api/v1/auth/:entity/refresh")!().message, /^Cannot refresh with an API key/);
 * assert.match(apiKeyRefusal("/api/v1/auth/login")!().message, /^Cannot log in with an API key/);
 * assert.match(apiKeyRefusal("/api/v1/sys/admins/logout")!().message, /^Cannot log out with an API key/);
 * assert.equal(apiKeyRefusal("/api/v1/entities/:entity"), undefined);
 * ```
 */
export function apiKeyRefusal(
  pattern: string,
): (() => MoonbaseError) | undefined {
  let step: string | undefined;
  if (pattern.startsWith("/api/v1/auth/")) {
    const segs = pattern.slice("/api/v1/auth/".length).split("/");
    step = segs[0] === ":entity" ? segs[1] : segs[0];
  } else {
    step = /^\/api\/v1\/sys\/admins\/(login|refresh|logout)$/.exec(pattern)
      ?.[1];
    if (step === undefined) return undefined;
  }
  const [action, hint] = refusals(step ?? "");
  return () => apiKeyRefused(action, hint);
}

function refusals(step: string): [string, string] {
  if (step.startsWith("login")) {
    return ["log in", "send the credentials without the key"];
  }
  if (step === "refresh") {
    return [
      "refresh",
      "a key is no session; it lasts until it expires or is deleted",
    ];
  }
  if (step === "logout") {
    return [
      "log out",
      "a key is no session; an admin deletes it (DELETE /api/v1/sys/api-keys/<id>)",
    ];
  }
  if (step === "impersonate") {
    return ["impersonate", "log in as the admin and use that token"];
  }
  return ["use account routes", "use a token from the user's own login"];
}
