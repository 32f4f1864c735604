/**
 * What a new API key's body must be (`POST /api/v1/sys/api-keys`, lib/auth/
 * api_keys.ts): `{name, entity, user_id, expires}` checked field by field,
 * every problem at once (400 with `data.fields`).
 *
 * @module
 */

import { type FieldErrors, invalidFields } from "../errors.ts";
import type { Entity } from "../records/entity.ts";
import type { Registry } from "../records/registry.ts";
import { isExposed } from "../records/access.ts";

/** Longest key name. */
const MAX_NAME = 100;

/** A checked body of a new key, and the time it was checked at (ms). */
export interface KeyInput {
  name: string;
  entity: Entity;
  userId: string;
  /** ISO 8601, or null for a key that never expires. */
  expires: string | null;
  now: number;
}

/**
 * The entity a key may act for: an exposed auth entity, or the admins'
 * system entity (the same test as a token's, lib/auth/sessions.ts).
 */
export function keyEntity(
  registry: Registry,
  name: unknown,
): Entity | undefined {
  if (typeof name !== "string") return undefined;
  const e = registry.byName(name);
  if (e === undefined || e.name !== name) return undefined;
  if (e.isSystem && e.type === "auth") return e;
  return isExposed(e, name, "auth") ? e : undefined;
}

/**
 * The body of a new key, checked (`expires`: an ISO 8601 time in the
 * future, or null / absent for a key that never expires); `clock` gives
 * the time base in ms. 400 with `data.fields` on anything wrong.
 */
export async function checkedKeyInput(
  body: Record<string, unknown>,
  registry: Registry,
  clock: () => number,
): Promise<KeyInput> {
  const fields: FieldErrors = {};
  for (const k of Object.keys(body)) {
    if (!["name", "entity", "user_id", "expires"].includes(k)) {
      fields[k] = {
        code: "unknown",
        message: `Unknown key; use name, entity, user_id, expires`,
      };
    }
  }
  const name = typeof body.name === "string" ? body.name.trim() : "";
  if (name === "" || name.length > MAX_NAME) {
    fields.name = {
      code: "required",
      message: `A name of 1 to ${MAX_NAME} characters is required`,
    };
  }
  const entity = keyEntity(registry, body.entity);
  if (!entity) {
    fields.entity = {
      code: "invalid",
      message:
        "Must name an auth entity with its API on, or mb_admins for an admin",
    };
  }
  const userId = typeof body.user_id === "string" ? body.user_id : "";
  if (userId === "") {
    fields.user_id = { code: "required", message: "A user id is required" };
  } else if (
    entity && (userId.length > 200 || !(await entity.recordExists(userId)))
  ) {
    fields.user_id = {
      code: "not_found",
      message: `No such record in ${entity.name}`,
    };
  }
  const now = clock();
  let expires: string | null = null;
  if (body.expires !== undefined && body.expires !== null) {
    const ms = typeof body.expires === "string" &&
        /^\d{4}-\d{2}-\d{2}/.test(body.expires)
      ? Date.parse(body.expires)
      : NaN;
    if (Number.isNaN(ms)) {
      fields.expires = {
        code: "invalid",
        message:
          "Must be an ISO 8601 time (2030-01-31T00:00:00Z), or null for a key that never expires",
      };
    } else if (ms <= now) {
      fields.expires = {
        code: "invalid",
        message: "Must be in the future",
      };
    } else expires = new Date(ms).toISOString();
  }
  if (Object.keys(fields).length > 0) {
    throw invalidFields(fields, "Cannot create API key: invalid fields");
  }
  return { name, entity: entity!, userId, expires, now };
}
