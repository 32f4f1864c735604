/**
 * TypeScript types of the entities (`moonbase types`, `GET
 * /api/v1/types.ts`): for each entity `<Entity>Record` (a read, with
 * `expand?: <Entity>Expand`), `<Entity>Create`, `<Entity>Update`, and the
 * map `Schema` from entity name to `{ record; create; update }`, which
 * `new Moonbase<Schema>(url)` takes. The file has no imports, so it can be
 * copied into any project. Field by field the types say what the JSON
 * Schemas of the OpenAPI document say (./entity_schemas.ts).
 *
 * @module
 */

import type { FieldDef } from "../schema/types.ts";
import {
  type DescribedEntity,
  expansions,
  isWriteOnly,
  type JsonSchema,
  mayBeNull,
  readableFields,
  requiredOnCreate,
  type SchemaScope,
  valueSchema,
  writableFields,
} from "./entity_schemas.ts";

/** A property key as TypeScript needs it. */
function key(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** The TypeScript type of a value schema (the subset valueSchema makes). */
function tsOf(schema: JsonSchema): string {
  if (Array.isArray(schema.enum)) {
    return schema.enum.length === 0
      ? "never"
      : schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  }
  switch (schema.type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "array":
      return `${tsOf(schema.items as JsonSchema)}[]`;
    default:
      return "JsonValue";
  }
}

/** A field's type in a read, `| null` where a stored value may be null. */
function readType(f: FieldDef, view: boolean): string {
  const t = tsOf(valueSchema(f, "read"));
  return mayBeNull(f, view) && t !== "JsonValue" ? `${wrap(t)} | null` : t;
}

function wrap(t: string): string {
  return t.includes(" | ") ? `(${t})` : t;
}

/** A field's type in a write: files may be uploads (`Blob`) or kept names. */
function writeType(f: FieldDef): string {
  let t: string;
  if (isWriteOnly(f)) t = "string";
  else if (f.type === "file") t = "string | Blob";
  else if (f.type === "files") t = "(string | Blob)[]";
  else t = tsOf(valueSchema(f, "write"));
  return f.required || t === "JsonValue" ? t : `${wrap(t)} | null`;
}

function doc(text: string, indent = ""): string {
  return `${indent}/** ${text.replaceAll("*/", "*\\/")} */\n`;
}

function fieldDoc(f: FieldDef): string {
  const parts: string[] = [f.type];
  if (f.required) parts.push("required");
  if (f.unique) parts.push("unique");
  if (f.min !== undefined) parts.push(`min ${f.min}`);
  if (f.max !== undefined) parts.push(`max ${f.max}`);
  if (f.pattern !== undefined) parts.push(`pattern ${f.pattern}`);
  if (f.foreign_key) parts.push(`→ ${f.foreign_key.entity}`);
  return doc(parts.join(", "), "  ");
}

const PRELUDE = `/** Any JSON value (a \`json\` field). */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

type Trim<S extends string> = S extends \` \${infer R}\` ? Trim<R>
  : S extends \`\${infer R} \` ? Trim<R>
  : S;
type Split<S extends string> = S extends \`\${infer H},\${infer T}\`
  ? Trim<H> | Split<T>
  : Trim<S>;
type Head<P extends string> = P extends \`\${infer H}.\${string}\` ? H : P;
type Below<P extends string, K extends string> = P extends \`\${K}.\${infer R}\`
  ? R
  : never;
type ExpandOf<R> = R extends { expand?: infer X } ? NonNullable<X> : never;
type Deeper<T, P extends string> = [P] extends [never] ? T
  : T extends readonly (infer U)[] ? WithExpand<U, P>[]
  : WithExpand<T, P>;

/**
 * A record type as an answer with \`?expand=P\` shows it, for a literal
 * \`P\` (\`"author,comments_via_post.author"\`): \`expand\` holds exactly the
 * named relations, each possibly absent (none, or hidden from the caller).
 * For a \`string\` that is not a literal, the record type itself.
 */
export type WithExpand<R, P extends string> = string extends P ? R
  : Omit<R, "expand"> & {
    expand: {
      [K in Head<Split<P>> & keyof ExpandOf<R>]?: Deeper<
        NonNullable<ExpandOf<R>[K]>,
        Below<Split<P>, K & string>
      >;
    };
  };
`;

/** Options of {@link typesModule}. */
export interface TypesOptions {
  /** The server's version, named in the header. */
  version: string;
}

/**
 * The TypeScript module for `entities` (all of them as an admin sees them:
 * pass each with every operation it has).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { typesModule } from "moonbase/lib/openapi/types_ts.ts";
 * import { adminOnlyRules } from "moonbase/lib/schema/types.ts";
 * const schema = {
 *   id: "e1", name: "posts", type: "base" as const, view_query: "", has_api: true,
 *   is_system: false, created: "", updated: "", rules: adminOnlyRules(),
 *   fields: [{ id: "f1", name: "title", type: "string" as const, required: true, unique: false }],
 * };
 * const ops = new Set(["list", "get", "add", "update", "delete"]);
 * const ts = typesModule([{ name: "posts", typeName: "Posts", schema, ops }], { version: "1" });
 * assert.ok(ts.includes("export type PostsRecord = {"));
 * assert.ok(ts.includes('"posts": { record: PostsRecord; create: PostsCreate; update: PostsUpdate }'));
 * ```
 */
export function typesModule(
  entities: readonly DescribedEntity[],
  options: TypesOptions,
): string {
  const scope: SchemaScope = {
    admin: true,
    entities: new Map(entities.map((e) => [e.name, e])),
    ref: (name) => name,
  };
  let out =
    `// Generated by Moonbase ${options.version} (moonbase types): the entities' record types.\n` +
    `// Regenerate after a schema change; do not edit.\n\n${PRELUDE}`;
  const map: string[] = [];
  for (const e of entities) {
    const t = e.typeName;
    const view = e.schema.type === "view";
    const expand = expansions(e, scope);
    out += `\n${doc(`A record of ${e.name}, as a read returns it.`)}`;
    out += `export type ${t}Record = {\n`;
    for (const f of readableFields(e.schema)) {
      out += `${fieldDoc(f)}  ${key(f.name)}: ${readType(f, view)};\n`;
    }
    if (expand.length > 0) {
      out += doc("Related records asked for with `?expand=`.", "  ");
      out += `  expand?: ${t}Expand;\n`;
    }
    out += "};\n";
    if (expand.length > 0) {
      out += `\n${doc(`What \`expand\` may hold on a record of ${e.name}.`)}`;
      out += `export type ${t}Expand = {\n`;
      for (const x of expand) {
        const target = `${x.target.typeName}Record`;
        out += `  ${key(x.key)}?: ${x.many ? `${target}[]` : target};\n`;
      }
      out += "};\n";
    }
    if (view) {
      out += `\n${doc(`${e.name} is a view: it takes no writes.`)}`;
      out +=
        `export type ${t}Create = never;\nexport type ${t}Update = never;\n`;
    } else {
      for (const mode of ["create", "update"] as const) {
        const name = `${t}${mode === "create" ? "Create" : "Update"}`;
        out += `\n${
          doc(
            mode === "create"
              ? `A new record of ${e.name}: JSON, or FormData when a field holds a Blob.`
              : `The fields to change on a record of ${e.name}.`,
          )
        }`;
        out += `export type ${name} = {\n`;
        for (const f of writableFields(e.schema, true)) {
          const optional = mode === "update" || !requiredOnCreate(f);
          out += `${fieldDoc(f)}  ${key(f.name)}${optional ? "?" : ""}: ${
            writeType(f)
          };\n`;
        }
        if (mode === "update" && e.schema.type === "auth") {
          out += doc(
            "The current password: a user changing their own password or email sends it.",
            "  ",
          );
          out += "  oldPassword?: string;\n";
        }
        out += "};\n";
      }
    }
    map.push(
      `  ${
        JSON.stringify(e.name)
      }: { record: ${t}Record; create: ${t}Create; update: ${t}Update };`,
    );
  }
  out += `\n${
    doc(
      "Every entity by name: `new Moonbase<Schema>(url).entity(name)` is typed by it.",
    )
  }export type Schema = {\n${map.join("\n")}${map.length > 0 ? "\n" : ""}};\n`;
  return out;
}
