/**
 * Type names of entities, shared by the OpenAPI document and the generated
 * TypeScript: `blog_posts` → `BlogPosts` (`BlogPosts`, `BlogPostsCreate`,
 * `BlogPostsUpdate` in the document; `BlogPostsRecord`, … in TypeScript).
 *
 * @module
 */

/**
 * The PascalCase base name of an entity name (`[A-Za-z0-9_]`): words split
 * at `_`, each capitalised; a name that would start with a digit gets `E`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pascalName } from "moonbase/lib/openapi/names.ts";
 * assert.equal(pascalName("blog_posts"), "BlogPosts");
 * assert.equal(pascalName("users"), "Users");
 * assert.equal(pascalName("2fa_codes"), "E2faCodes");
 * assert.equal(pascalName("_x"), "X");
 * ```
 */
export function pascalName(name: string): string {
  const out = name.split("_").filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1)).join("");
  if (out === "") return "Entity";
  return /^[0-9]/.test(out) ? `E${out}` : out;
}

/** The suffixes each entity's base name carries in one of its types. */
export const TYPE_SUFFIXES: readonly string[] = [
  "",
  "Record",
  "Create",
  "Update",
  "Expand",
];

/**
 * Type names for a list of entity names: their `pascalName`, with a number
 * added where any of its types (the base name with each of `TYPE_SUFFIXES`)
 * would collide with another entity's (`blog_posts` and `blogPosts`,
 * `posts` and `posts_create`) or with a name the caller reserves (`Error`,
 * `Schema`). The order of `names` decides who keeps the plain name: pass
 * them in a stable order (creation).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { typeNames } from "moonbase/lib/openapi/names.ts";
 * const t = typeNames(
 *   ["blog_posts", "blogPosts", "error", "blog_posts_create"],
 *   new Set(["Error"]),
 * );
 * assert.equal(t.get("blog_posts"), "BlogPosts");
 * assert.equal(t.get("blogPosts"), "BlogPosts2");
 * assert.equal(t.get("error"), "Error2");
 * assert.equal(t.get("blog_posts_create"), "BlogPostsCreate2");
 * ```
 */
export function typeNames(
  names: readonly string[],
  reserved: ReadonlySet<string> = new Set(),
): Map<string, string> {
  const taken = new Set(reserved);
  const out = new Map<string, string>();
  for (const name of names) {
    const base = pascalName(name);
    const clashes = (c: string) => TYPE_SUFFIXES.some((x) => taken.has(c + x));
    let candidate = base;
    for (let n = 2; clashes(candidate); n++) candidate = `${base}${n}`;
    for (const x of TYPE_SUFFIXES) taken.add(candidate + x);
    out.set(name, candidate);
  }
  return out;
}
