/**
 * The schemas every OpenAPI document carries: the envelope and its error
 * form, a login's result, pages, the schema objects, log entries, batches.
 *
 * @module
 */

import type { JsonSchema } from "./entity_schemas.ts";

const str: JsonSchema = { type: "string" };
const ref = (name: string): JsonSchema => ({
  $ref: `#/components/schemas/${name}`,
});

const FIELD_TYPES = [
  "string",
  "text",
  "email",
  "url",
  "int",
  "double",
  "bool",
  "date",
  "json",
  "select",
  "file",
  "files",
  "relation",
];

/** The common schemas, by name. */
export const COMMON_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  Error: {
    type: "object",
    description:
      'Every error: `status` equals the HTTP status, `error` reads "Cannot <action>: <reason>"; a validation error (400) names each field in `data.fields`.',
    properties: {
      status: { type: "integer" },
      data: {
        anyOf: [
          { type: "null" },
          {
            type: "object",
            properties: {
              fields: {
                type: "object",
                additionalProperties: {
                  type: "object",
                  properties: { code: str, message: str },
                  required: ["code", "message"],
                },
              },
            },
          },
        ],
      },
      error: { type: "string", minLength: 1 },
    },
    required: ["status", "data", "error"],
  },
  Envelope: {
    type: "object",
    description: "A JSON answer: `{status, data, error}`.",
    properties: {
      status: { type: "integer" },
      data: {},
      error: str,
    },
    required: ["status", "data", "error"],
  },
  AuthResult: {
    type: "object",
    description: "A signed-in user (or admin) and their token.",
    properties: {
      token: { type: "string", description: "a JWT for Authorization: Bearer" },
      user: {
        type: "object",
        description: "the user's record, without its password",
        properties: { id: str, email: str },
        required: ["id"],
      },
    },
    required: ["token", "user"],
  },
  Health: {
    type: "object",
    properties: {
      status: { type: "string", enum: ["ok", "degraded", "down"] },
      uptime: { type: "integer" },
      version: str,
      database: { type: "string", enum: ["ok", "unavailable", "full"] },
      database_kind: { type: "string", enum: ["sqlite", "postgres"] },
      files: { type: "string", enum: ["ok", "unavailable"] },
      files_kind: { type: "string", enum: ["local", "s3"] },
      backups: { type: "string", enum: ["ok", "unavailable"] },
      backups_kind: { type: "string", enum: ["local", "s3"] },
    },
    required: [
      "status",
      "uptime",
      "version",
      "database",
      "database_kind",
      "files",
      "files_kind",
      "backups",
      "backups_kind",
    ],
  },
  AnyRecord: {
    type: "object",
    description:
      "A record of some entity: id, created, updated and its fields.",
    properties: {
      id: str,
      created: { type: "string", format: "date-time" },
      updated: { type: "string", format: "date-time" },
    },
    additionalProperties: true,
  },
  Page: {
    type: "object",
    description: "A page of records; `total` only with count=true.",
    properties: {
      items: { type: "array", items: ref("AnyRecord") },
      items_count: { type: "integer" },
      limit: { type: "integer" },
      has_more: { type: "boolean" },
      cursor: { type: ["string", "null"] },
      total: { type: "integer" },
    },
    required: ["items", "items_count", "limit", "has_more", "cursor"],
  },
  Backup: {
    type: "object",
    description: "A backup archive in the data directory.",
    properties: {
      name: str,
      size: { type: "integer" },
      created: { type: "string", format: "date-time" },
    },
    required: ["name", "size", "created"],
  },
  Admin: {
    type: "object",
    properties: {
      id: str,
      email: { type: "string", format: "email" },
      verified: { type: "boolean" },
      created: { type: "string", format: "date-time" },
      updated: { type: "string", format: "date-time" },
    },
    required: ["id", "email", "created", "updated"],
  },
  AdminPage: {
    type: "object",
    properties: {
      items: { type: "array", items: ref("Admin") },
      items_count: { type: "integer" },
      limit: { type: "integer" },
      has_more: { type: "boolean" },
      cursor: { type: ["string", "null"] },
      total: { type: "integer" },
    },
    required: ["items", "items_count", "limit", "has_more", "cursor"],
  },
  Rule: {
    type: "object",
    properties: {
      mode: { type: "string", enum: ["public", "auth", "", "custom"] },
      expr: str,
    },
    required: ["mode", "expr"],
  },
  Field: {
    type: "object",
    properties: {
      id: str,
      name: str,
      type: { type: "string", enum: FIELD_TYPES },
      required: { type: "boolean" },
      unique: { type: "boolean" },
      index: { type: "boolean" },
      default: {},
      min: { type: "number" },
      max: { type: "number" },
      pattern: str,
      values: { type: "array", items: str },
      mime_types: { type: "array", items: str },
      foreign_key: {
        type: "object",
        properties: {
          entity: str,
          on_delete: {
            type: "string",
            enum: ["cascade", "set null", "restrict"],
          },
        },
        required: ["entity"],
      },
      system: { type: "boolean" },
      op: {
        type: "string",
        enum: ["delete"],
        description: "PATCH: drop the field",
      },
    },
    required: ["name"],
  },
  EntitySchema: {
    type: "object",
    description: "An entity: its fields, rules and options.",
    properties: {
      id: str,
      name: { type: "string", pattern: "^[A-Za-z0-9_]{1,64}$" },
      type: { type: "string", enum: ["base", "auth", "view"] },
      fields: { type: "array", items: ref("Field") },
      indexes: {
        type: "array",
        items: {
          type: "object",
          properties: {
            id: str,
            fields: { type: "array", items: str },
            unique: { type: "boolean" },
          },
        },
      },
      view_query: str,
      rules: {
        type: "object",
        properties: {
          list: ref("Rule"),
          get: ref("Rule"),
          add: ref("Rule"),
          update: ref("Rule"),
          delete: ref("Rule"),
        },
      },
      auth: { type: "object" },
      has_api: { type: "boolean" },
      is_system: { type: "boolean" },
      created: { type: "string", format: "date-time" },
      updated: { type: "string", format: "date-time" },
    },
  },
  LogEntry: {
    type: "object",
    properties: {
      id: str,
      time: { type: "string", format: "date-time" },
      level: {
        type: "string",
        enum: ["trace", "debug", "info", "warn", "error"],
      },
      type: { type: "string", enum: ["request", "app"] },
      message: str,
      method: { type: ["string", "null"] },
      path: { type: ["string", "null"] },
      status: { type: ["integer", "null"] },
      duration_ms: { type: ["number", "null"] },
      ip: { type: ["string", "null"] },
      auth_id: { type: ["string", "null"] },
      auth_entity: { type: ["string", "null"] },
      request_id: { type: ["string", "null"] },
      data: {},
    },
    required: ["id", "time", "level", "type", "message"],
  },
  LogPage: {
    type: "object",
    properties: {
      items: { type: "array", items: ref("LogEntry") },
      items_count: { type: "integer" },
      limit: { type: "integer" },
      has_more: { type: "boolean" },
      cursor: { type: ["string", "null"] },
    },
    required: ["items", "items_count", "limit", "has_more", "cursor"],
  },
  BatchRequest: {
    type: "object",
    properties: {
      requests: {
        type: "array",
        items: {
          type: "object",
          properties: {
            method: {
              type: "string",
              enum: ["POST", "PATCH", "DELETE", "PUT"],
              description: "PUT: upsert by the body's id",
            },
            url: {
              type: "string",
              description: "/api/v1/entities/<entity>[/<id>], no query",
            },
            body: { type: "object" },
          },
          required: ["method", "url"],
          additionalProperties: false,
        },
      },
    },
    required: ["requests"],
    additionalProperties: false,
  },
};

/**
 * Names entities' types may not take: the common schemas', and the
 * generated TypeScript's own (`Schema`, `JsonValue`, `WithExpand`).
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([
  ...Object.keys(COMMON_SCHEMAS),
  "Schema",
  "JsonValue",
  "WithExpand",
]);
