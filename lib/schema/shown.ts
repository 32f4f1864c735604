/**
 * A schema as the schemas API shows it (and as an export carries it).
 *
 * @module
 */

import { authOptions, publicAuthOptions } from "./auth_options.ts";
import type { EntitySchema } from "./types.ts";

/**
 * A schema as the API shows it: base and auth entities always list
 * `indexes`; auth entities their `auth` object, client secrets blanked.
 */
export function shownSchema(schema: EntitySchema): EntitySchema {
  const out = schema.type === "view" || schema.indexes
    ? schema
    : { ...schema, indexes: [] };
  if (schema.type !== "auth" || schema.is_system) return out;
  return { ...out, auth: publicAuthOptions(authOptions(schema)) };
}
