/**
 * What each built-in route does, for the OpenAPI document: one entry per
 * `METHOD /pattern` the router registers (routes/mod.ts). The document is
 * made from the router's registrations, so a route missing here still
 * appears (as an undescribed operation), and tests/openapi_test.ts fails
 * until it is described here.
 *
 * Over 350 lines, one idea: a table with one entry per built-in route; kept
 * whole because it is data, read by route, not logic.
 *
 * @module
 */

import type { JsonSchema } from "./entity_schemas.ts";

/** Who may call a route. */
export type RouteAccess =
  | "public" // anyone; a token changes nothing or is optional
  | "bearer" // a user's (or admin's) token
  | "admin" // an admin's token or an API key of an admin
  | "setup" // the one-time setup token
  | "rules"; // the entity's rules decide

/** A query parameter. */
export interface QueryParam {
  name: string;
  description: string;
  schema?: JsonSchema;
  required?: boolean;
}

/** One operation. */
export interface RouteDoc {
  tag: string;
  summary: string;
  description?: string;
  access: RouteAccess;
  query?: readonly QueryParam[];
  /** A JSON request body (`required` unless said otherwise). */
  body?: JsonSchema;
  bodyOptional?: boolean;
  /** The success answer: `data` in the envelope, or another media type. */
  ok: {
    status: number;
    description: string;
    data?: JsonSchema;
    /** Not an envelope: the media type of the answer. */
    media?: string;
    headers?: readonly string[];
  };
  /** Answers the login rate limit (X-RateLimit-* headers, 429). */
  limited?: boolean;
}

/** Descriptions of path parameters, by name. */
export const PATH_PARAMS: Readonly<Record<string, string>> = {
  entity: "an entity's name",
  id: "a record's id",
  name: "a file's stored name (or an asset's name)",
  page:
    "the account page: confirm-verification, reset-password or confirm-email-change",
};

const str: JsonSchema = { type: "string" };
const obj: JsonSchema = { type: "object" };
const ref = (name: string): JsonSchema => ({
  $ref: `#/components/schemas/${name}`,
});
const objectOf = (
  properties: Record<string, JsonSchema>,
  required: string[] = Object.keys(properties),
): JsonSchema => ({ type: "object", properties, required });

const credentials = objectOf({
  identity: { type: "string", description: "email address or user id" },
  password: str,
  mfa_id: { type: "string", description: "the first factor's mfa_id" },
}, ["identity", "password"]);
const emailBody = objectOf({ email: { type: "string", format: "email" } });
const tokenBody = objectOf({ token: str });
const codeBody = objectOf({ code: str });

/** The list parameters of records (and admins). */
export const LIST_PARAMS: readonly QueryParam[] = [
  {
    name: "limit",
    description: "page size, 1–500 (default 50)",
    schema: { type: "integer", minimum: 1, maximum: 500 },
  },
  {
    name: "after",
    description: "the `cursor` of the previous page",
  },
  {
    name: "sort",
    description:
      "comma list of fields, `-` for descending (`-created,title`); then id",
  },
  {
    name: "filter",
    description:
      "an expression over the fields (the rule language), URL-encoded",
  },
  {
    name: "search",
    description:
      "words the searchable fields contain (the last one also as a prefix), in any case and with any accents; best match first unless `sort` is given; 400 on an entity without searchable fields",
  },
  {
    name: "fields",
    description:
      "comma list of fields to return; `expand.…` entries reach into expansions",
  },
  {
    name: "expand",
    description:
      "related records to include: relation fields and `<entity>_via_<field>`, dotted for depth (`author,comments_via_post.author`)",
  },
  {
    name: "count",
    description: "`true` adds `total`",
    schema: { type: "string", enum: ["true", "false"] },
  },
];

/** `expand` and `fields`, on one record's answers. */
export const SHAPE_PARAMS: readonly QueryParam[] = LIST_PARAMS.filter((p) =>
  p.name === "expand" || p.name === "fields"
);

const authResult = ref("AuthResult");
const entityPath = "/api/v1/auth/:entity";

function account(summary: string, body: JsonSchema): RouteDoc {
  return {
    tag: "account",
    summary,
    access: "public",
    body,
    ok: {
      status: 204,
      description: "done (or nothing to do: the answer never tells)",
      headers: ["X-RateLimit-Limit", "X-RateLimit-Remaining"],
    },
  };
}

function login(summary: string, body: JsonSchema): RouteDoc {
  return {
    tag: "auth",
    summary,
    access: "public",
    body,
    limited: true,
    ok: { status: 200, description: "signed in", data: authResult },
  };
}

const asset = (summary: string, media: string): RouteDoc => ({
  tag: "pages",
  summary,
  access: "public",
  ok: { status: 200, description: summary, media },
});

/** Every built-in route, by `METHOD /pattern` as the router holds it. */
export const BUILTIN_ROUTES: Readonly<Record<string, RouteDoc>> = {
  "GET /api/v1/health": {
    tag: "system",
    summary: "Health: status, uptime, version, the database's state",
    access: "public",
    ok: { status: 200, description: "up", data: ref("Health") },
  },
  "GET /api/v1/openapi.json": {
    tag: "system",
    summary: "This document, for the caller",
    description:
      "The OpenAPI 3.1 description of this server as the caller may use it: a guest sees the entities some rule opens to guests, a user those open to users, an admin everything.",
    access: "public",
    ok: {
      status: 200,
      description: "an OpenAPI 3.1 document",
      media: "application/json",
    },
  },
  "GET /api/v1/types.ts": {
    tag: "system",
    summary: "TypeScript types of every entity (admins)",
    access: "admin",
    ok: {
      status: 200,
      description:
        "`<Entity>Record`, `<Entity>Create`, `<Entity>Update` and the map `Schema`",
      media: "text/plain",
    },
  },
  // Admins
  "GET /api/v1/sys/admins": {
    tag: "admins",
    summary: "List admins",
    access: "admin",
    query: LIST_PARAMS.filter((p) =>
      p.name !== "expand" && p.name !== "search"
    ),
    ok: { status: 200, description: "a page", data: ref("AdminPage") },
  },
  "POST /api/v1/sys/admins": {
    tag: "admins",
    summary: "Create an admin",
    access: "admin",
    body: objectOf({
      email: { type: "string", format: "email" },
      password: str,
    }),
    ok: { status: 201, description: "created", data: ref("Admin") },
  },
  "GET /api/v1/sys/admins/:id": {
    tag: "admins",
    summary: "One admin",
    access: "admin",
    ok: { status: 200, description: "the admin", data: ref("Admin") },
  },
  "PATCH /api/v1/sys/admins/:id": {
    tag: "admins",
    summary: "Change an admin (a new password revokes their other tokens)",
    access: "admin",
    body: objectOf({
      email: { type: "string", format: "email" },
      password: str,
    }, []),
    ok: { status: 200, description: "changed", data: ref("Admin") },
  },
  "DELETE /api/v1/sys/admins/:id": {
    tag: "admins",
    summary: "Delete an admin (never the last one: 409)",
    access: "admin",
    ok: { status: 204, description: "deleted" },
  },
  "POST /api/v1/sys/admins/setup": {
    tag: "admins",
    summary: "Create the first admin with the setup token printed at start",
    access: "setup",
    body: objectOf({
      email: { type: "string", format: "email" },
      password: str,
    }),
    ok: {
      status: 201,
      description: "the first admin, signed in",
      data: authResult,
    },
  },
  "GET /api/v1/sys/admins/setup": {
    tag: "admins",
    summary: "Whether the server waits for its first admin",
    access: "public",
    ok: {
      status: 200,
      description: "`required`: no admin exists yet",
      data: objectOf({ required: { type: "boolean" } }),
    },
  },
  "POST /api/v1/sys/admins/login": {
    ...login("Admin login", credentials),
    tag: "admins",
  },
  "POST /api/v1/sys/admins/refresh": {
    tag: "admins",
    summary: "A new admin token; the presented one is revoked",
    access: "admin",
    ok: { status: 200, description: "a new token", data: authResult },
  },
  "POST /api/v1/sys/admins/logout": {
    tag: "admins",
    summary: "Revoke the presented admin token",
    access: "admin",
    ok: { status: 200, description: "revoked", data: { type: "null" } },
  },
  // API keys
  "POST /api/v1/sys/api-keys": {
    tag: "api keys",
    summary: "Create an API key acting as a user (the key is shown once)",
    access: "admin",
    body: objectOf({
      name: str,
      entity: str,
      user_id: str,
      expires: { type: ["string", "null"], format: "date-time" },
    }, ["name", "entity", "user_id"]),
    ok: { status: 201, description: "the key, with its secret", data: obj },
  },
  "GET /api/v1/sys/api-keys": {
    tag: "api keys",
    summary: "List API keys (never their secrets)",
    access: "admin",
    ok: {
      status: 200,
      description: "the keys",
      data: { type: "array", items: obj },
    },
  },
  "DELETE /api/v1/sys/api-keys/:id": {
    tag: "api keys",
    summary: "Delete an API key",
    access: "admin",
    ok: { status: 204, description: "deleted" },
  },
  // Schemas
  "GET /api/v1/schemas": {
    tag: "schemas",
    summary: "Every entity's schema, system ones included",
    access: "admin",
    ok: {
      status: 200,
      description: "the schemas",
      data: { type: "array", items: ref("EntitySchema") },
    },
  },
  "POST /api/v1/schemas": {
    tag: "schemas",
    summary: "Create an entity",
    access: "admin",
    body: ref("EntitySchema"),
    ok: { status: 201, description: "created", data: ref("EntitySchema") },
  },
  "GET /api/v1/schemas/export": {
    tag: "schemas",
    summary:
      "Every entity's schema but the system ones, in dependency order, for POST /api/v1/schemas/import",
    access: "admin",
    ok: {
      status: 200,
      description: "the schemas",
      data: objectOf({
        schemas: { type: "array", items: ref("EntitySchema") },
      }),
    },
  },
  "POST /api/v1/schemas/import": {
    tag: "schemas",
    summary:
      "Make the schemas here the given ones (matched by id, else by name) in one transaction; a dry run by default",
    access: "admin",
    body: objectOf({
      schemas: { type: "array", items: ref("EntitySchema") },
      delete_missing: {
        type: "boolean",
        description: "also delete the entities the list lacks (default false)",
      },
      dry_run: {
        type: "boolean",
        description:
          "check everything, change nothing (default true; false applies)",
      },
    }, ["schemas"]),
    ok: {
      status: 200,
      description: "what the import changes (or would change)",
      data: objectOf({
        changes: {
          type: "array",
          items: objectOf({
            entity: str,
            action: { type: "string", enum: ["create", "update", "delete"] },
            details: {
              type: "array",
              items: objectOf({
                key: str,
                action: {
                  type: "string",
                  enum: ["create", "update", "delete"],
                },
                from: {},
                to: {},
              }, ["key", "action"]),
            },
          }),
        },
        dry_run: { type: "boolean" },
      }),
    },
  },
  "GET /api/v1/schemas/:id": {
    tag: "schemas",
    summary: "One entity's schema, by id or name",
    access: "admin",
    ok: { status: 200, description: "the schema", data: ref("EntitySchema") },
  },
  "PATCH /api/v1/schemas/:id": {
    tag: "schemas",
    summary: "Change an entity (fields matched by id; one transaction)",
    access: "admin",
    body: ref("EntitySchema"),
    ok: { status: 200, description: "changed", data: ref("EntitySchema") },
  },
  "DELETE /api/v1/schemas/:id": {
    tag: "schemas",
    summary: "Delete an entity and its table",
    access: "admin",
    ok: { status: 204, description: "deleted" },
  },
  "GET /api/v1/sys/counts": {
    tag: "schemas",
    summary: "Record counts per entity (capped at 10 000)",
    access: "admin",
    ok: {
      status: 200,
      description: "entity → count (null where counting fails)",
      data: {
        type: "object",
        additionalProperties: { type: ["integer", "null"] },
      },
    },
  },
  // Logs
  "GET /api/v1/sys/logs": {
    tag: "logs",
    summary: "Log entries, newest first",
    access: "admin",
    query: [
      {
        name: "limit",
        description: "1–1000, default 50",
        schema: { type: "integer", minimum: 1, maximum: 1000 },
      },
      { name: "after", description: "the `cursor` of the previous page" },
      {
        name: "level",
        description: "exactly this level",
        schema: {
          type: "string",
          enum: ["trace", "debug", "info", "warn", "error"],
        },
      },
      {
        name: "min_level",
        description: "at least this level",
        schema: {
          type: "string",
          enum: ["trace", "debug", "info", "warn", "error"],
        },
      },
      {
        name: "type",
        description: "request or app",
        schema: { type: "string", enum: ["request", "app"] },
      },
      { name: "search", description: "text in the message or path" },
      { name: "start_date", description: "ISO 8601 lower bound" },
      { name: "end_date", description: "ISO 8601 upper bound" },
    ],
    ok: { status: 200, description: "a page of entries", data: ref("LogPage") },
  },
  "GET /api/v1/sys/logs/stats": {
    tag: "logs",
    summary: "Counts of log entries over time",
    access: "admin",
    ok: { status: 200, description: "the counts", data: obj },
  },
  "GET /api/v1/sys/logs/:id": {
    tag: "logs",
    summary: "One log entry",
    access: "admin",
    ok: { status: 200, description: "the entry", data: ref("LogEntry") },
  },
  // Rule tools
  "POST /api/v1/sys/rules/check": {
    tag: "rules",
    summary: "Check a rule or filter expression",
    access: "admin",
    body: objectOf({
      entity: str,
      expr: str,
      kind: { type: "string", enum: ["rule", "filter"] },
      completions: { type: "boolean" },
    }, ["entity", "expr"]),
    ok: { status: 200, description: "valid or not, and why", data: obj },
  },
  "GET /api/v1/sys/rules/vocabulary": {
    tag: "rules",
    summary: "Names a rule of an entity may use (for completions)",
    access: "admin",
    query: [{ name: "entity", description: "the entity", required: true }],
    ok: {
      status: 200,
      description: "record, auth, req, helpers, methods",
      data: obj,
    },
  },
  "POST /api/v1/sys/rules/test": {
    tag: "rules",
    summary: "Try a draft rule on stored records as a given caller",
    access: "admin",
    body: objectOf({
      entity: str,
      op: { type: "string", enum: ["list", "get", "add", "update", "delete"] },
      rule: ref("Rule"),
      as: { type: ["object", "null"] },
      limit: { type: "integer", minimum: 1, maximum: 50 },
    }, ["entity", "op", "rule"]),
    ok: { status: 200, description: "each record allowed or not", data: obj },
  },
  // Backups
  "GET /api/v1/sys/backups": {
    tag: "backups",
    summary: "The backups in the data directory, newest first",
    access: "admin",
    ok: {
      status: 200,
      description: "the backups",
      data: { type: "array", items: ref("Backup") },
    },
  },
  "POST /api/v1/sys/backups": {
    tag: "backups",
    summary: "Make a backup while the server keeps serving",
    access: "admin",
    body: objectOf({ name: str }, []),
    bodyOptional: true,
    ok: { status: 201, description: "made", data: ref("Backup") },
  },
  "POST /api/v1/sys/backups/upload": {
    tag: "backups",
    summary:
      "Upload a backup (multipart: the archive in `file`, its name in `name`)",
    access: "admin",
    ok: { status: 201, description: "checked and stored", data: ref("Backup") },
  },
  "GET /api/v1/sys/backups/:name": {
    tag: "backups",
    summary:
      "Download a backup (an admin token, or an admin's file token as `?token=`)",
    access: "admin",
    query: [{ name: "token", description: "an admin's file token" }],
    ok: { status: 200, description: "the archive", media: "application/gzip" },
  },
  "DELETE /api/v1/sys/backups/:name": {
    tag: "backups",
    summary: "Delete a backup",
    access: "admin",
    ok: { status: 204, description: "deleted" },
  },
  "POST /api/v1/sys/backups/:name/restore": {
    tag: "backups",
    summary:
      "Replace the data with a backup's, all or nothing (writes answer 503 meanwhile)",
    access: "admin",
    ok: { status: 200, description: "restored", data: obj },
  },
  // Settings
  "GET /api/v1/sys/settings": {
    tag: "settings",
    summary: "The app's settings (secrets blanked)",
    access: "admin",
    ok: { status: 200, description: "the settings", data: obj },
  },
  "PATCH /api/v1/sys/settings": {
    tag: "settings",
    summary: "Change the app's settings",
    access: "admin",
    body: obj,
    ok: { status: 200, description: "the settings", data: obj },
  },
  "POST /api/v1/sys/settings/test-mail": {
    tag: "settings",
    summary: "Send a test mail",
    access: "admin",
    body: objectOf({ to: { type: "string", format: "email" } }),
    ok: { status: 204, description: "sent" },
  },
  "POST /api/v1/sys/oauth2/discovery": {
    tag: "settings",
    summary: "Check an OpenID Connect issuer's discovery document",
    access: "admin",
    body: objectOf({ issuer: { type: "string", format: "uri" } }),
    ok: { status: 200, description: "what the issuer offers", data: obj },
  },
  // Auth
  "POST /api/v1/auth/login": login(
    "Legacy login: the entity in the body",
    objectOf({ entity: str, identity: str, password: str }),
  ),
  "POST /api/v1/auth/refresh": {
    tag: "auth",
    summary: "Legacy refresh: the entity from the token",
    access: "bearer",
    ok: { status: 200, description: "a new token", data: authResult },
  },
  "POST /api/v1/auth/logout": {
    tag: "auth",
    summary: "Legacy logout: the entity from the token",
    access: "bearer",
    ok: { status: 200, description: "revoked", data: { type: "null" } },
  },
  "POST /api/v1/auth/setup/admin": {
    tag: "admins",
    summary: "Alias of POST /api/v1/sys/admins/setup",
    access: "setup",
    body: objectOf({
      email: { type: "string", format: "email" },
      password: str,
    }),
    ok: {
      status: 201,
      description: "the first admin, signed in",
      data: authResult,
    },
  },
  [`GET ${entityPath}/methods`]: {
    tag: "auth",
    summary: "The sign-in methods an auth entity offers",
    access: "public",
    query: [{
      name: "redirect_url",
      description: "put into each OAuth2 auth_url",
    }],
    ok: {
      status: 200,
      description: "password, otp, mfa, oauth2 providers",
      data: obj,
    },
  },
  [`POST ${entityPath}/login`]: login("Sign in with a password", credentials),
  [`POST ${entityPath}/refresh`]: {
    tag: "auth",
    summary: "A new token with a later expiry; the old one is revoked",
    access: "bearer",
    ok: { status: 200, description: "a new token", data: authResult },
  },
  [`POST ${entityPath}/logout`]: {
    tag: "auth",
    summary: "Revoke the presented token",
    access: "bearer",
    ok: { status: 200, description: "revoked", data: { type: "null" } },
  },
  [`POST ${entityPath}/request-otp`]: {
    tag: "auth",
    summary: "Mail a sign-in code (answers for unknown addresses too)",
    access: "public",
    body: emailBody,
    limited: true,
    ok: {
      status: 200,
      description: "the code's id",
      data: objectOf({ otp_id: str }),
    },
  },
  [`POST ${entityPath}/login-otp`]: login(
    "Sign in with a mailed code",
    objectOf({ otp_id: str, code: str, mfa_id: str }, ["otp_id", "code"]),
  ),
  [`POST ${entityPath}/login-totp`]: login(
    "Second factor: a TOTP code",
    objectOf({ mfa_id: str, code: str }),
  ),
  [`POST ${entityPath}/totp/setup`]: {
    tag: "auth",
    summary: "Start TOTP enrolment (the user's own token)",
    access: "bearer",
    ok: {
      status: 200,
      description: "the secret and its otpauth URI",
      data: objectOf({ secret: str, uri: str }),
    },
  },
  [`POST ${entityPath}/totp/confirm`]: {
    tag: "auth",
    summary: "Confirm TOTP enrolment with a code",
    access: "bearer",
    body: codeBody,
    ok: { status: 204, description: "enrolled" },
  },
  [`POST ${entityPath}/totp/disable`]: {
    tag: "auth",
    summary: "Turn TOTP off with a code",
    access: "bearer",
    body: codeBody,
    ok: { status: 204, description: "disabled" },
  },
  [`POST ${entityPath}/login-oauth2`]: {
    ...login(
      "Sign in with an OAuth2 / OpenID Connect provider (PKCE)",
      objectOf({
        provider: str,
        code: str,
        code_verifier: str,
        redirect_url: str,
        state: str,
        mfa_id: str,
      }, ["provider", "code", "code_verifier", "redirect_url"]),
    ),
    ok: {
      status: 200,
      description: "signed in; meta.is_new for a new user",
      data: {
        allOf: [
          authResult,
          objectOf({ meta: objectOf({ is_new: { type: "boolean" } }) }),
        ],
      },
    },
  },
  [`POST ${entityPath}/impersonate/:id`]: {
    tag: "auth",
    summary: "A token acting as a user, that cannot be refreshed (admins)",
    access: "admin",
    body: objectOf({ duration: { type: "integer", minimum: 1 } }, []),
    ok: { status: 200, description: "the user's token", data: authResult },
  },
  [`POST ${entityPath}/request-verification`]: account(
    "Mail a verification link",
    emailBody,
  ),
  [`POST ${entityPath}/confirm-verification`]: account(
    "Confirm an email address with the mailed token",
    tokenBody,
  ),
  [`POST ${entityPath}/request-password-reset`]: account(
    "Mail a password reset link",
    emailBody,
  ),
  [`POST ${entityPath}/confirm-password-reset`]: account(
    "Set a new password with the mailed token",
    objectOf({ token: str, password: str }),
  ),
  [`POST ${entityPath}/request-email-change`]: {
    ...account("Mail a link to change the signed-in user's email", emailBody),
    access: "bearer",
  },
  [`POST ${entityPath}/confirm-email-change`]: account(
    "Change the email with the mailed token and the password",
    objectOf({ token: str, password: str }),
  ),
  // Records (any entity; each entity the caller may use has its own paths)
  "GET /api/v1/entities/:entity": {
    tag: "records",
    summary: "List records of any entity (the list rule decides)",
    access: "rules",
    query: LIST_PARAMS,
    ok: { status: 200, description: "a page", data: ref("Page") },
  },
  "POST /api/v1/entities/:entity": {
    tag: "records",
    summary: "Create a record of any entity (the add rule decides)",
    access: "rules",
    query: SHAPE_PARAMS,
    body: obj,
    ok: { status: 201, description: "created", data: ref("AnyRecord") },
  },
  "GET /api/v1/entities/:entity/:id": {
    tag: "records",
    summary: "One record of any entity (the get rule decides)",
    access: "rules",
    query: SHAPE_PARAMS,
    ok: { status: 200, description: "the record", data: ref("AnyRecord") },
  },
  "PATCH /api/v1/entities/:entity/:id": {
    tag: "records",
    summary: "Change a record of any entity (the update rule decides)",
    access: "rules",
    query: SHAPE_PARAMS,
    body: obj,
    ok: { status: 200, description: "changed", data: ref("AnyRecord") },
  },
  "DELETE /api/v1/entities/:entity/:id": {
    tag: "records",
    summary: "Delete a record of any entity (the delete rule decides)",
    access: "rules",
    ok: { status: 204, description: "deleted" },
  },
  "GET /api/v1/entities/:entity/aggregate": {
    tag: "records",
    summary:
      "Counts, sums, averages, minimums and maximums per group (the list rule decides)",
    access: "rules",
    query: [
      {
        name: "group",
        description:
          "comma list of fields; dates as `created:day|week|month|year` (UTC)",
      },
      {
        name: "count",
        description: "`true` counts each group",
        schema: { type: "string", enum: ["true", "false"] },
      },
      { name: "sum", description: "comma list of number fields" },
      { name: "avg", description: "comma list of number fields" },
      { name: "min", description: "comma list of number or date fields" },
      { name: "max", description: "comma list of number or date fields" },
      ...LIST_PARAMS.filter((p) => p.name === "filter" || p.name === "search"),
    ],
    ok: {
      status: 200,
      description: "the groups (at most 1000)",
      data: objectOf({ groups: { type: "array", items: obj } }),
    },
  },
  "POST /api/v1/batch": {
    tag: "records",
    summary: "Several record writes in one transaction",
    access: "rules",
    body: ref("BatchRequest"),
    ok: {
      status: 200,
      description: "one answer per request, in order",
      data: { type: "array", items: ref("Envelope") },
    },
  },
  // Files
  "POST /api/v1/files/token": {
    tag: "files",
    summary: "A short-lived file token (120 s) for ?token=",
    access: "bearer",
    ok: {
      status: 200,
      description: "the token",
      data: objectOf({ token: str }),
    },
  },
  "GET /api/v1/files/:entity/:name": {
    tag: "files",
    summary: "Alias of GET /api/files/{entity}/{name}",
    access: "rules",
    query: [{
      name: "token",
      description: "a token, where no header can be set",
    }],
    ok: {
      status: 200,
      description: "the file (Range, ETag)",
      media: "application/octet-stream",
    },
  },
  "GET /api/files/:entity/:name": {
    tag: "files",
    summary: "Download a file (the owning record's get rule decides)",
    access: "rules",
    query: [{
      name: "token",
      description: "a token, where no header can be set",
    }],
    ok: {
      status: 200,
      description: "the file (Range, ETag)",
      media: "application/octet-stream",
    },
  },
  // Realtime
  "GET /api/v1/realtime": {
    tag: "realtime",
    summary: "Subscribe to record changes (Server-Sent Events)",
    access: "rules",
    query: [
      {
        name: "topics",
        description:
          "comma list: `<entity>` or `<entity>/<id>`, each with optional `?expand=`",
        required: true,
      },
      {
        name: "token",
        description: "a token, since EventSource cannot set headers",
      },
    ],
    ok: {
      status: 200,
      description: "an event stream",
      media: "text/event-stream",
    },
  },
  "GET /api/v1/realtime/ws": {
    tag: "realtime",
    summary: "Subscribe to record changes over a WebSocket (with --websocket)",
    access: "rules",
    query: [{
      name: "token",
      description: "a token (or send it in the first message)",
    }],
    ok: { status: 101, description: "switching to the WebSocket protocol" },
  },
  // Pages
  "GET /mb": asset("The dashboard", "text/html"),
  "GET /mb/assets/:name": asset(
    "A dashboard asset",
    "application/octet-stream",
  ),
  "GET /mb/assets/account.js": asset(
    "The account pages' script",
    "text/javascript",
  ),
  "GET /mb/assets/account.css": asset(
    "The account pages' style sheet",
    "text/css",
  ),
  "GET /mb/auth/:entity/:page": asset(
    "An account page a mailed link opens",
    "text/html",
  ),
};

/**
 * Registered routes the document leaves out, and why: a trailing `*`
 * (the dashboard's client-side pages) has no OpenAPI form.
 */
export const LEFT_OUT: Readonly<Record<string, string>> = {
  "GET /mb/*": "the dashboard's client-side pages (a wildcard path)",
};
