/**
 * The OpenAPI 3.1 document of a running server, for one caller: every
 * route the router registers (described by ./builtin_routes.ts), and for
 * each entity the caller may use its own paths and the schemas `<Entity>`,
 * `<Entity>Create` and `<Entity>Update` (./entity_schemas.ts). Built on
 * each request from the schemas in memory, so it follows schema changes.
 *
 * Over 350 lines, one idea: one document builder; kept whole because an
 * entity's operations use the same envelope, security and parameter helpers as
 * the built-in routes'.
 *
 * @module
 */

import {
  BUILTIN_ROUTES,
  LEFT_OUT,
  LIST_PARAMS,
  PATH_PARAMS,
  type QueryParam,
  type RouteAccess,
  type RouteDoc,
  SHAPE_PARAMS,
} from "./builtin_routes.ts";
import {
  type DescribedEntity,
  hasFiles,
  type JsonSchema,
  multipartSchema,
  readSchema,
  type SchemaScope,
  writeSchema,
} from "./entity_schemas.ts";
import { COMMON_SCHEMAS } from "./common_schemas.ts";

/** What the document is made of. */
export interface DocumentInput {
  /** The server's version (`info.version`). */
  version: string;
  /** The app's name (`info.title`). */
  title: string;
  /** Every registered `[method, pattern]` (`Router.routes()`). */
  routes: Iterable<[string, string]>;
  /** The entities the caller may use, each with the operations open to it. */
  entities: readonly DescribedEntity[];
  /** Who asks. */
  caller: "guest" | "user" | "admin";
}

/** An OpenAPI document (a JSON object). */
export type OpenApiDocument = JsonSchema;

const ref = (name: string): JsonSchema => ({
  $ref: `#/components/schemas/${name}`,
});

/** The envelope of a success: `{status, data, error: ""}`. */
function envelope(status: number, data: JsonSchema | undefined): JsonSchema {
  return {
    type: "object",
    properties: {
      status: { type: "integer", const: status },
      data: data ?? {},
      error: { type: "string", const: "" },
    },
    required: ["status", "data", "error"],
  };
}

/** `/api/v1/entities/:entity` → `/api/v1/entities/{entity}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function pathParams(pattern: string): JsonSchema[] {
  return [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    description: PATH_PARAMS[name] ?? name,
    schema: { type: "string" },
  }));
}

function queryParams(params: readonly QueryParam[] = []): JsonSchema[] {
  return params.map((p) => ({
    name: p.name,
    in: "query",
    ...(p.required && { required: true }),
    description: p.description,
    schema: p.schema ?? { type: "string" },
  }));
}

const SECURITY: Record<RouteAccess, JsonSchema[] | undefined> = {
  public: [{}],
  rules: undefined, // the document's default: a token is optional
  bearer: [{ bearer: [] }],
  admin: [{ bearer: [] }],
  setup: [{ setupToken: [] }],
};

const ACCESS_NOTE: Record<RouteAccess, string> = {
  public: "",
  rules: "",
  bearer: "Needs a token.",
  admin: "Admins only.",
  setup: "Needs the one-time setup token printed at start.",
};

/** A camelCase operation id from the method and path. */
function operationId(method: string, pattern: string, taken: Set<string>) {
  const words = pattern.replace(/^\/api\/v1\//, "/").split(/[^A-Za-z0-9:]+/)
    .filter(Boolean)
    .map((w) => w.startsWith(":") ? `By_${w.slice(1)}` : w)
    .flatMap((w) => w.split("_"))
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1));
  const base = method.toLowerCase() + words.join("");
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}${n}`;
  taken.add(id);
  return id;
}

function operation(
  method: string,
  pattern: string,
  doc: RouteDoc,
  taken: Set<string>,
  id?: string,
): JsonSchema {
  const note = ACCESS_NOTE[doc.access];
  const description = [doc.description, note].filter(Boolean).join(" ");
  const security = SECURITY[doc.access];
  const parameters = [...pathParams(pattern), ...queryParams(doc.query)];
  const ok = doc.ok;
  const success: JsonSchema = ok.status === 204 || ok.status === 101
    ? { description: ok.description }
    : {
      description: ok.description,
      content: ok.media
        ? {
          [ok.media]: {
            schema: ok.media === "application/json"
              ? { type: "object" }
              : { type: "string" },
          },
        }
        : { "application/json": { schema: envelope(ok.status, ok.data) } },
    };
  if (ok.headers || doc.limited) {
    const names = doc.limited
      ? ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]
      : ok.headers ?? [];
    success.headers = Object.fromEntries(
      names.map((h) => [h, { schema: { type: "integer" } }]),
    );
  }
  return {
    operationId: id ?? operationId(method, pattern, taken),
    tags: [doc.tag],
    summary: doc.summary,
    ...(description && { description }),
    ...(security && { security }),
    ...(parameters.length > 0 && { parameters }),
    ...(doc.body && {
      requestBody: {
        required: !doc.bodyOptional,
        content: { "application/json": { schema: doc.body } },
      },
    }),
    responses: {
      [String(ok.status)]: success,
      "4XX": { $ref: "#/components/responses/Error" },
      "5XX": { $ref: "#/components/responses/Error" },
    },
  };
}

/** The operation of a registered route no entry describes. */
const UNDESCRIBED: RouteDoc = {
  tag: "other",
  summary: "A route the application added",
  access: "rules",
  ok: { status: 200, description: "its answer", media: "application/json" },
};

function entityOperations(
  e: DescribedEntity,
  scope: SchemaScope,
  taken: Set<string>,
): Record<string, JsonSchema> {
  const t = e.typeName;
  const base = `/api/v1/entities/${e.name}`;
  const one = `${base}/:id`;
  const page: JsonSchema = {
    type: "object",
    properties: {
      items: { type: "array", items: ref(t) },
      items_count: { type: "integer" },
      limit: { type: "integer" },
      has_more: { type: "boolean" },
      cursor: { type: ["string", "null"] },
      total: { type: "integer" },
    },
    required: ["items", "items_count", "limit", "has_more", "cursor"],
  };
  const writeBody = (mode: "create" | "update"): JsonSchema => ({
    required: true,
    content: {
      "application/json": {
        schema: ref(`${t}${mode === "create" ? "Create" : "Update"}`),
      },
      ...(hasFiles(e.schema) && {
        "multipart/form-data": { schema: multipartSchema(e, mode, scope) },
      }),
    },
  });
  const op = (
    method: string,
    pattern: string,
    doc: RouteDoc,
    body?: JsonSchema,
  ): JsonSchema => {
    // listPosts, createPosts, getPosts, updatePosts, deletePosts
    const stem = `${doc.summary.split(" ")[0].toLowerCase()}${t}`;
    let id = stem;
    for (let n = 2; taken.has(id); n++) id = `${stem}${n}`;
    taken.add(id);
    const out = operation(method, pattern, doc, taken, id);
    if (body) out.requestBody = body;
    return out;
  };
  const paths: Record<string, JsonSchema> = {};
  const list: JsonSchema = {};
  if (e.ops.has("list")) {
    list.get = op("GET", base, {
      tag: e.name,
      summary: `List ${e.name}`,
      access: "rules",
      query: LIST_PARAMS,
      ok: { status: 200, description: "a page", data: page },
    });
  }
  if (e.ops.has("add")) {
    list.post = op("POST", base, {
      tag: e.name,
      summary: `Create a record of ${e.name}`,
      access: "rules",
      query: SHAPE_PARAMS,
      ok: { status: 201, description: "created", data: ref(t) },
    }, writeBody("create"));
  }
  const item: JsonSchema = {};
  if (e.ops.has("get")) {
    item.get = op("GET", one, {
      tag: e.name,
      summary: `Get a record of ${e.name}`,
      access: "rules",
      query: SHAPE_PARAMS,
      ok: { status: 200, description: "the record", data: ref(t) },
    });
  }
  if (e.ops.has("update")) {
    item.patch = op("PATCH", one, {
      tag: e.name,
      summary: `Update a record of ${e.name}`,
      access: "rules",
      query: SHAPE_PARAMS,
      ok: { status: 200, description: "the record", data: ref(t) },
    }, writeBody("update"));
  }
  if (e.ops.has("delete")) {
    item.delete = op("DELETE", one, {
      tag: e.name,
      summary: `Delete a record of ${e.name}`,
      access: "rules",
      ok: { status: 204, description: "deleted" },
    });
  }
  if (Object.keys(list).length > 0) paths[openApiPath(base)] = list;
  if (Object.keys(item).length > 0) paths[openApiPath(one)] = item;
  return paths;
}

/**
 * The document. Routes are described in the router's order, each
 * entity's paths after the built-in ones.
 */
export function openApiDocument(input: DocumentInput): OpenApiDocument {
  const taken = new Set<string>();
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const [method, pattern] of input.routes) {
    const key = `${method} ${pattern}`;
    if (key in LEFT_OUT || pattern.includes("*")) continue;
    const doc = BUILTIN_ROUTES[key] ?? UNDESCRIBED;
    const path = openApiPath(pattern);
    (paths[path] ??= {})[method.toLowerCase()] = operation(
      method,
      pattern,
      doc,
      taken,
    );
  }
  const entities = new Map(input.entities.map((e) => [e.name, e]));
  const scope: SchemaScope = {
    admin: input.caller === "admin",
    entities,
    ref: (name) => `#/components/schemas/${name}`,
  };
  const schemas: Record<string, JsonSchema> = { ...COMMON_SCHEMAS };
  for (const e of input.entities) {
    schemas[e.typeName] = readSchema(e, scope);
    if (e.ops.has("add")) {
      schemas[`${e.typeName}Create`] = writeSchema(e, "create", scope);
    }
    if (e.ops.has("update")) {
      schemas[`${e.typeName}Update`] = writeSchema(e, "update", scope);
    }
    Object.assign(paths, entityOperations(e, scope, taken));
  }
  return {
    openapi: "3.1.0",
    info: {
      title: input.title,
      version: input.version,
      description: `The API of this Moonbase server, as ${
        input.caller === "guest"
          ? "a guest"
          : input.caller === "user"
          ? "this user"
          : "an admin"
      } may use it. Every JSON answer is an envelope {status, data, error}.`,
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    servers: [{ url: "/" }],
    security: [{}, { bearer: [] }],
    tags: [
      ...input.entities.map((e) => ({
        name: e.name,
        description: `Records of ${e.name}`,
      })),
    ],
    paths,
    components: {
      schemas,
      responses: {
        Error: {
          description: "an error: `error` says what went wrong and what to do",
          content: { "application/json": { schema: ref("Error") } },
        },
      },
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "A token from a login (`Authorization: Bearer <token>`), or an API key (`mbk_…`).",
        },
        setupToken: {
          type: "http",
          scheme: "bearer",
          description:
            "The one-time setup token the server prints at start while no admin exists.",
        },
      },
    },
  };
}
