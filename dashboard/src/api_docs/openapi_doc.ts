/**
 * The server's OpenAPI document as the dashboard reads it
 * (`GET /api/v1/openapi.json`, the admin's: every route and entity), and
 * what the API pages show of it: an entity's operations, its record
 * fields, and sample calls in curl and in client code.
 *
 * @module
 */

/** A JSON Schema (the subset the pages read). */
export interface Schema {
  type?: string | string[];
  $ref?: string;
  enum?: unknown[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  description?: string;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  writeOnly?: boolean;
  contentMediaType?: string;
  "x-moonbase-relation"?: string;
  [key: string]: unknown;
}

/** One operation. */
export interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Record<string, unknown>[];
  parameters?: {
    name: string;
    in: string;
    required?: boolean;
    description?: string;
    schema?: Schema;
  }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses?: Record<
    string,
    { description?: string; content?: Record<string, { schema: Schema }> }
  >;
}

/** The document. */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** Loads the document with the admin's token. */
export async function loadDocument(
  token: string,
  signal?: AbortSignal,
): Promise<OpenApiDocument> {
  let res: Response;
  try {
    res = await fetch("/api/v1/openapi.json", {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new Error(
      "Cannot load the API description: the server is not reachable.",
    );
  }
  if (!res.ok) {
    throw new Error(
      `Cannot load the API description: the server answered ${res.status}.`,
    );
  }
  return await res.json() as OpenApiDocument;
}

/** The HTTP methods in the order pages list them. */
export const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** One method of one path. */
export interface Endpoint {
  method: string;
  path: string;
  op: Operation;
}

/** Every endpoint of the document, in document order. */
export function endpoints(doc: OpenApiDocument): Endpoint[] {
  const out: Endpoint[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) out.push({ method, path, op });
    }
  }
  return out;
}

/** The endpoints of one entity (its own paths), list first. */
export function entityEndpoints(
  doc: OpenApiDocument,
  entity: string,
): Endpoint[] {
  const base = `/api/v1/entities/${entity}`;
  return endpoints(doc).filter((e) =>
    e.path === base || e.path === `${base}/{id}`
  );
}

/** The schema name a `$ref` points at (`#/components/schemas/Posts` → `Posts`). */
export function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf("/") + 1);
}

/** The name of an entity's record schema (`Posts`), from its get or list. */
export function recordSchemaName(
  doc: OpenApiDocument,
  entity: string,
): string | undefined {
  for (const e of entityEndpoints(doc, entity)) {
    const ok = e.op.responses?.["200"] ?? e.op.responses?.["201"];
    const data = ok?.content?.["application/json"]?.schema.properties?.data;
    const ref = data?.$ref ?? data?.properties?.items?.items?.$ref;
    if (ref) return refName(ref);
  }
  return undefined;
}

/** A schema in one line: `string | null`, `"a" | "b"`, `Users[]`. */
export function typeText(s: Schema | undefined): string {
  if (!s) return "any";
  if (s.$ref) return refName(s.$ref);
  if (s.enum) {
    return s.enum.map((v) => v === null ? "null" : JSON.stringify(v)).join(
      " | ",
    );
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length === 0) return s.contentMediaType ? "binary" : "any JSON";
  return types.map((t) =>
    t === "array"
      ? `${typeText(s.items)}[]`
      : t === "string" && s.format
      ? `string (${s.format})`
      : t
  ).join(" | ");
}

/** Constraints of a schema in words: `1–120 chars`, `pattern ^…$`. */
export function constraintText(s: Schema): string {
  const parts: string[] = [];
  const range = (lo?: number, hi?: number, unit = "") =>
    lo !== undefined && hi !== undefined
      ? `${lo}–${hi}${unit}`
      : lo !== undefined
      ? `≥ ${lo}${unit}`
      : hi !== undefined
      ? `≤ ${hi}${unit}`
      : "";
  const chars = range(s.minLength, s.maxLength, " chars");
  if (chars) parts.push(chars);
  const num = range(s.minimum, s.maximum);
  if (num) parts.push(num);
  if (s.pattern) parts.push(`pattern ${s.pattern}`);
  if (s["x-moonbase-relation"]) parts.push(`→ ${s["x-moonbase-relation"]}`);
  if (s.writeOnly) parts.push("write-only");
  return parts.join(", ");
}

/** A sample value for a write of a field with this schema. */
export function sampleValue(name: string, s: Schema): unknown {
  if (s.enum) return s.enum.find((v) => v !== null) ?? null;
  const type = Array.isArray(s.type)
    ? s.type.find((t) => t !== "null")
    : s.type;
  if (s["x-moonbase-relation"]) return `<${s["x-moonbase-relation"]} id>`;
  if (s.writeOnly) return "a-long-password";
  switch (type) {
    case "string":
      if (s.format === "email") return "user@example.com";
      if (s.format === "uri") return "https://example.com";
      if (s.pattern?.startsWith("^\\d{4}")) return new Date(0).toISOString();
      return s.minLength && s.minLength > 5 ? "x".repeat(s.minLength) : name;
    case "integer":
    case "number":
      return s.minimum ?? 1;
    case "boolean":
      return true;
    case "array":
      return [];
    default:
      return {};
  }
}

/** A sample body of a create: the required fields, else the first two. */
export function sampleBody(
  create: Schema | undefined,
): Record<string, unknown> {
  const props = create?.properties ?? {};
  const required = create?.required ?? [];
  const names = required.length > 0
    ? required
    : Object.keys(props).filter((n) => !props[n].writeOnly).slice(0, 2);
  return Object.fromEntries(names.map((n) => [n, sampleValue(n, props[n])]));
}

/** Sample calls of one entity, by operation: curl and client code. */
export interface Samples {
  curl: string;
  client: string;
}

const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * The sample calls of an endpoint of `entity`, for a server at `origin`,
 * with `body` as a create or update sends it.
 */
export function samplesOf(
  e: Endpoint,
  entity: string,
  origin: string,
  body: Record<string, unknown>,
): Samples {
  const one = e.path.endsWith("{id}");
  const url = `${origin}${e.path.replace("{id}", "RECORD_ID")}`;
  const auth = '-H "Authorization: Bearer $TOKEN"';
  const json = JSON.stringify(body);
  const ent = `mb.entity(${JSON.stringify(entity)})`;
  const pretty = JSON.stringify(body, null, 2);
  switch (e.method) {
    case "get":
      return one
        ? {
          curl: `curl ${q(url)} ${auth}`,
          client: `const record = await ${ent}.get("RECORD_ID");`,
        }
        : {
          curl: `curl -G ${
            q(url)
          } ${auth} \\\n  --data-urlencode 'sort=-created' \\\n  --data-urlencode 'limit=20'`,
          client:
            `const page = await ${ent}.list({ sort: "-created", limit: 20 });\n// page.items, page.cursor, page.has_more`,
        };
    case "post":
      return {
        curl: `curl -X POST ${
          q(url)
        } ${auth} \\\n  -H "Content-Type: application/json" \\\n  -d ${
          q(json)
        }`,
        client: `const record = await ${ent}.create(${pretty});`,
      };
    case "patch":
      return {
        curl: `curl -X PATCH ${
          q(url)
        } ${auth} \\\n  -H "Content-Type: application/json" \\\n  -d ${
          q(json)
        }`,
        client: `const record = await ${ent}.update("RECORD_ID", ${pretty});`,
      };
    default:
      return {
        curl: `curl -X DELETE ${q(url)} ${auth}`,
        client: `await ${ent}.delete("RECORD_ID");`,
      };
  }
}
