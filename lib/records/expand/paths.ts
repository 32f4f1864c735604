/**
 * The `expand` parameter: comma-separated paths, dot-separated to nest
 * (`author,comments_via_post.author`), parsed into a tree of segments with
 * its limits. Whether a segment names a relation is the plan's business
 * (`plan.ts`); here only the syntax and the size.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";

/** Levels one path may nest (`a.b.c.d.e.f`). */
export const MAX_DEPTH = 6;
/** Segments (distinct nodes of the tree) one `expand` may name. */
export const MAX_SEGMENTS = 60;
/** Longest `expand` value accepted. */
export const MAX_EXPAND_LENGTH = 2000;

/** A parsed `expand`: segment → what to expand under it (in the order first named). */
export type ExpandTree = Map<string, ExpandTree>;

const SEGMENT = /^[A-Za-z0-9_]{1,200}$/;

function invalid(action: string, message: string): MoonbaseError {
  return new MoonbaseError("invalid", `Cannot ${action}: ${message}`);
}

/**
 * Parses an `expand` value; `action` starts the 400's message (`list
 * records`). Repeated paths merge; an empty value is an empty tree.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpand } from "moonbase/lib/records/expand/paths.ts";
 * const t = parseExpand("author, comments_via_post.author,author", "list records");
 * assert.deepEqual([...t.keys()], ["author", "comments_via_post"]);
 * assert.deepEqual([...t.get("comments_via_post")!.keys()], ["author"]);
 * assert.throws(() => parseExpand("a.b.c.d.e.f.g", "list records"), { code: "invalid" });
 * assert.throws(() => parseExpand("a..b", "list records"), { code: "invalid" });
 * ```
 */
export function parseExpand(value: string, action: string): ExpandTree {
  if (value.length > MAX_EXPAND_LENGTH) {
    throw invalid(
      action,
      `expand is too long (at most ${MAX_EXPAND_LENGTH} characters)`,
    );
  }
  const tree: ExpandTree = new Map();
  let nodes = 0;
  for (const raw of value.split(",")) {
    const path = raw.trim();
    if (path === "") continue;
    const segments = path.split(".");
    const shown = JSON.stringify(path.slice(0, 200));
    if (segments.length > MAX_DEPTH) {
      throw invalid(
        action,
        `expand path ${shown} is ${segments.length} levels deep; at most ${MAX_DEPTH}`,
      );
    }
    let at = tree;
    for (const seg of segments) {
      if (!SEGMENT.test(seg)) {
        throw invalid(
          action,
          `malformed expand path ${shown} (segments are relation fields or <entity>_via_<field>, joined by dots)`,
        );
      }
      let next = at.get(seg);
      if (!next) {
        if (++nodes > MAX_SEGMENTS) {
          throw invalid(
            action,
            `expand names too many paths (at most ${MAX_SEGMENTS} segments in all)`,
          );
        }
        at.set(seg, next = new Map());
      }
      at = next;
    }
  }
  return tree;
}

/**
 * The tree written back as one `expand` value (paths in a stable order):
 * two subscriptions asking the same expansions have the same text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { expandText, parseExpand } from "moonbase/lib/records/expand/paths.ts";
 * assert.equal(expandText(parseExpand("b.c,a,b", "x")), "a,b.c");
 * ```
 */
export function expandText(tree: ExpandTree): string {
  const out: string[] = [];
  const walk = (t: ExpandTree, prefix: string) => {
    for (const key of [...t.keys()].sort()) {
      const sub = t.get(key)!;
      const path = prefix ? `${prefix}.${key}` : key;
      if (sub.size === 0) out.push(path);
      else walk(sub, path);
    }
  };
  walk(tree, "");
  return out.join(",");
}
