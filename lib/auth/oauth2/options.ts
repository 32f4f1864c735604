/**
 * An auth entity's `auth.oauth2` options, as sign-in reads them.
 *
 * The `auth` object of a schema (checked, stored and defaulted) is the
 * foundation of issue 30 (`lib/schema/auth_options.ts` `authOptions`);
 * until it is merged, this reads the stored object as it is, and an entity
 * without one has OAuth2 off.
 *
 * @module
 */

import type { Entity } from "../../records/entity.ts";
import type { OAuth2Options } from "./types.ts";

const OFF: OAuth2Options = Object.freeze({
  enabled: false,
  providers: [],
  fields: { name: null, avatar: null },
});

/** The OAuth2 options of an auth entity (off when it has none). */
export function oauth2Options(entity: Entity): OAuth2Options {
  const auth = (entity.schema as { auth?: { oauth2?: OAuth2Options } }).auth;
  return auth?.oauth2 ?? OFF;
}
