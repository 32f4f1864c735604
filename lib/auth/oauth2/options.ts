/**
 * An auth entity's `auth.oauth2` options, as sign-in reads them (the
 * `auth` object, its defaults and checks: lib/schema/auth_options.ts).
 *
 * @module
 */

import type { Entity } from "../../records/entity.ts";
import { authOptions } from "../../schema/auth_options.ts";
import type { OAuth2Options } from "./types.ts";

/** The OAuth2 options of an auth entity. */
export function oauth2Options(entity: Entity): OAuth2Options {
  return authOptions(entity.schema).oauth2;
}
