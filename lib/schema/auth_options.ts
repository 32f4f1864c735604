/**
 * An auth entity's `auth` object (docs/guide/settings-and-mail.md): which sign-in
 * methods it offers, OTP/MFA/TOTP options, OAuth2 providers, and the mail
 * templates. Checked when a schema is created or changed (unknown keys and
 * bad values: 400 with `data.fields` by path, `auth.otp.length`), stored in
 * the schema, and read through `authOptions(entity)`, which fills the
 * defaults for what a schema does not say (schemas from before this object).
 * A provider's `client_secret` is write-only, as the settings' secrets are.
 * The defaults themselves are in auth_defaults.ts.
 *
 * @module
 */

import { type FieldErrors, invalidFields } from "../errors.ts";
import type { EntitySchema, FieldDef, FieldType } from "./types.ts";
import {
  type AuthOptions,
  type OAuth2Provider,
  PROVIDER_PRESETS,
  TEMPLATE_PURPOSES,
} from "./auth_types.ts";

export * from "./auth_types.ts";
import { defaultAuthOptions, defaultTemplates } from "./auth_defaults.ts";
export { defaultAuthOptions, defaultTemplates };
import {
  boolean,
  type Check,
  type Checked,
  integer,
  isObject,
  line,
  mergeShape,
  oneOf,
  redactShape,
  type Shape,
  text,
} from "./shape.ts";

function fieldRef(v: unknown): Checked {
  if (v === null) return { ok: true, value: null };
  return line(64, 1)(v);
}

const TEMPLATE_SHAPE: Shape = {
  subject: { check: line(300, 1) },
  body: { check: text(20_000) },
  html: { check: text(100_000) },
  action_url: { check: line(2000) },
};

/** Every key of `auth` but the providers (checked one by one). */
const AUTH_SHAPE: Shape = {
  password: { enabled: { check: boolean } },
  require_verified: { check: boolean },
  otp: {
    enabled: { check: boolean },
    duration: { check: integer(30, 86_400) },
    length: { check: integer(4, 12) },
  },
  mfa: {
    enabled: { check: boolean },
    duration: { check: integer(30, 86_400) },
  },
  totp: { enabled: { check: boolean } },
  oauth2: {
    enabled: { check: boolean },
    // Checked by `checkProviders`; the placeholder keeps the key known.
    providers: { check: (v) => ({ ok: true, value: v }) },
    fields: {
      name: { check: fieldRef },
      avatar: { check: fieldRef },
    },
  },
  templates: Object.fromEntries(
    TEMPLATE_PURPOSES.map((p) => [p, TEMPLATE_SHAPE]),
  ),
};

/**
 * An OpenID issuer: an https URL without query or fragment (plain http only
 * for this machine), trailing slashes dropped; "" for none. The one check of
 * an issuer URL (the schema and the dashboard's issuer check).
 */
export function issuerUrl(v: unknown): Checked {
  if (v === "") return { ok: true, value: "" };
  const l = line(2000)(v);
  if (!l.ok) return l;
  let u: URL;
  try {
    u = new URL(v as string);
  } catch {
    return { ok: false, code: "invalid_url", message: "Must be a URL" };
  }
  const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(u.hostname);
  if (
    !(u.protocol === "https:" || (u.protocol === "http:" && loopback)) ||
    u.search || u.hash
  ) {
    return {
      ok: false,
      code: "invalid_url",
      message:
        "Must be an https URL without query or fragment (http only for localhost)",
    };
  }
  return { ok: true, value: (v as string).replace(/\/+$/, "") };
}

const scopes: Check = (v) => {
  if (
    !Array.isArray(v) || v.length > 50 ||
    !v.every((s) => typeof s === "string" && /^[\x21-\x7e]{1,200}$/.test(s))
  ) {
    return {
      ok: false,
      code: "invalid_value",
      message: "Must be a list of at most 50 scopes without spaces",
    };
  }
  return { ok: true, value: [...v] };
};

const PROVIDER_SHAPE: Shape = {
  name: {
    check: (v) =>
      typeof v === "string" && /^[a-z0-9_-]{1,64}$/.test(v)
        ? { ok: true, value: v }
        : {
          ok: false,
          code: "invalid_name",
          message: "Must be 1-64 of a-z, 0-9, _ and -",
        },
  },
  display_name: { check: line(100) },
  issuer: { check: issuerUrl },
  preset: {
    check: (v) =>
      v === "" ? { ok: true, value: "" } : oneOf(PROVIDER_PRESETS)(v),
  },
  client_id: { check: line(500, 1) },
  // Sent to this issuer's token endpoint only: another needs it again.
  client_secret: {
    check: line(4000),
    secret: true,
    boundTo: { server: ["issuer", "preset"] },
  },
  scopes: { check: scopes },
};

function emptyProvider(): OAuth2Provider {
  return {
    name: "",
    display_name: "",
    issuer: "",
    preset: "",
    client_id: "",
    client_secret: "",
    scopes: [],
  };
}

/** The providers of a change: a list replaces the old one; a secret left out is kept by name. */
function checkProviders(
  input: unknown,
  current: OAuth2Provider[],
  errors: FieldErrors,
): OAuth2Provider[] {
  const at = "auth.oauth2.providers";
  if (!Array.isArray(input) || input.length > 50) {
    errors[at] = {
      code: "invalid_type",
      message: "Must be a list of at most 50 providers",
    };
    return current;
  }
  const out: OAuth2Provider[] = [];
  const seen = new Set<string>();
  input.forEach((raw, i) => {
    const path = `${at}.${i}`;
    const named = isObject(raw) && typeof raw.name === "string"
      ? current.find((p) => p.name === raw.name)
      : undefined;
    // The stored secret of the provider with this name, unless it is replaced.
    const base = {
      ...emptyProvider(),
      client_secret: named?.client_secret ?? "",
    };
    const before = Object.keys(errors).length;
    // The secret stays only with the issuer it was given for (`boundTo`).
    const p = mergeShape(
      PROVIDER_SHAPE,
      base,
      raw,
      errors,
      `${path}.`,
      named ?? base,
    );
    if (Object.keys(errors).length > before) return;
    if (p.name === "") {
      errors[`${path}.name`] = { code: "required", message: "Required" };
    } else if (seen.has(p.name)) {
      errors[`${path}.name`] = {
        code: "duplicate",
        message: `Provider "${p.name}" is listed twice`,
      };
    }
    seen.add(p.name);
    if ((p.issuer === "") === (p.preset === "")) {
      errors[`${path}.issuer`] = {
        code: "required",
        message: "Give either issuer (OpenID Connect discovery) or preset",
      };
    }
    if (p.client_id === "") {
      errors[`${path}.client_id`] = { code: "required", message: "Required" };
    }
    if (p.display_name === "") p.display_name = p.name;
    out.push(p);
  });
  return out;
}

/**
 * The `auth` object after a create (`current` the defaults) or a partial
 * change, or 400 with `data.fields` naming every wrong key by its path.
 * `fields` are the entity's final declared fields: `oauth2.fields` must
 * name one of them (`name`: string or text; `avatar`: string, url or file).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkAuthOptions, defaultAuthOptions } from "moonbase/lib/schema/auth_options.ts";
 * const a = checkAuthOptions({ otp: { enabled: true } }, defaultAuthOptions(), []);
 * assert.deepEqual(a.otp, { enabled: true, duration: 180, length: 6 });
 * assert.throws(() => checkAuthOptions({ otp: { lenght: 8 } }, a, []), /auth\.otp\.lenght/);
 * ```
 */
export function checkAuthOptions(
  input: unknown,
  current: AuthOptions,
  fields: readonly FieldDef[],
): AuthOptions {
  const errors: FieldErrors = {};
  const next = mergeShape(AUTH_SHAPE, current, input, errors, "auth.");
  if (
    isObject(input) && isObject(input.oauth2) && "providers" in input.oauth2
  ) {
    next.oauth2.providers = checkProviders(
      input.oauth2.providers,
      current.oauth2.providers,
      errors,
    );
  }
  for (const key of ["name", "avatar"] as const) {
    const name = next.oauth2.fields[key];
    if (name === null || errors[`auth.oauth2.fields.${key}`]) continue;
    const f = fields.find((f) => !f.system && f.name === name);
    const types: FieldType[] = key === "name"
      ? ["string", "text"]
      : ["string", "url", "file"];
    if (!f || !types.includes(f.type)) {
      errors[`auth.oauth2.fields.${key}`] = {
        code: "unknown_field",
        message: `Must name a ${types.join(", ")} field of this entity`,
      };
    }
  }
  if (Object.keys(errors).length > 0) {
    throw invalidFields(errors, "Cannot accept auth: invalid options");
  }
  return next;
}

const cache = new WeakMap<EntitySchema, AuthOptions>();

/**
 * The `auth` options of an entity (the defaults for what its schema does
 * not say). The object is shared and frozen: do not change it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { authOptions } from "moonbase/lib/schema/auth_options.ts";
 * import { ADMIN_SCHEMA } from "moonbase/lib/schema/system.ts";
 * assert.equal(authOptions(ADMIN_SCHEMA).templates.otp.action_url, "");
 * ```
 */
export function authOptions(
  entity: EntitySchema | { readonly schema: EntitySchema },
): AuthOptions {
  const schema = "schema" in entity ? entity.schema : entity;
  let options = cache.get(schema);
  if (!options) {
    const stored = schema.auth;
    // Keys a later version added get their defaults.
    const merged = stored
      ? mergeShape(AUTH_SHAPE, defaultAuthOptions(), stored, {})
      : defaultAuthOptions();
    merged.oauth2 = {
      ...merged.oauth2,
      providers: structuredClone(stored?.oauth2?.providers ?? []),
    };
    options = deepFreeze(merged);
    cache.set(schema, options);
  }
  return options;
}

function deepFreeze<T>(x: T): T {
  if (typeof x === "object" && x !== null) {
    for (const v of Object.values(x)) deepFreeze(v);
    Object.freeze(x);
  }
  return x;
}

/** The `auth` object as the schemas API shows it: client secrets "" with `client_secret_set`. */
export function publicAuthOptions(options: AuthOptions): AuthOptions {
  return {
    ...options,
    oauth2: {
      ...options.oauth2,
      providers: options.oauth2.providers.map((p) =>
        redactShape(PROVIDER_SHAPE, p)
      ),
    },
  };
}
