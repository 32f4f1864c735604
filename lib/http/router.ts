/**
 * A small trie router: static segments, `:params` and a trailing `*` (the
 * rest of the path, in `params["*"]`), with 404 vs 405 + `Allow`.
 *
 * @module
 */

/** Result of a lookup. */
export type Match<H> =
  | {
    kind: "found";
    handler: H;
    params: Record<string, string>;
    /**
     * How specific the matched pattern is: one digit per segment (2 static,
     * 1 `:param`, 0 `*`); a greater string is a more specific pattern.
     */
    specificity: string;
  }
  | { kind: "method_not_allowed"; allow: string[] }
  | { kind: "not_found" };

interface Node<H> {
  statics: Map<string, Node<H>>;
  param?: { name: string; node: Node<H> };
  /** A trailing `*`: matches one or more remaining segments. */
  rest?: Node<H>;
  handlers: Map<string, H>;
  /** Specificity of the pattern ending here (see `Match`). */
  specificity: string;
}

function node<H>(): Node<H> {
  return { statics: new Map(), handlers: new Map(), specificity: "" };
}

/**
 * Maps `METHOD /path/:param` patterns to handlers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Router } from "moonbase/lib/http/router.ts";
 * const r = new Router<string>();
 * r.add("GET", "/api/v1/entities/:entity/:id", "get");
 * const m = r.match("GET", "/api/v1/entities/posts/42");
 * assert.ok(m.kind === "found" && m.params.id === "42");
 * assert.ok(r.match("PUT", "/api/v1/entities/posts/42").kind === "method_not_allowed");
 * ```
 */
export class Router<H> {
  #root: Node<H> = node();

  /** Registers a handler; a later registration of the same route replaces it. */
  add(method: string, pattern: string, handler: H): this {
    let cur = this.#root;
    const segs = pattern.split("/").filter(Boolean);
    const specificity = segs.map((seg) =>
      seg === "*" ? "0" : seg.startsWith(":") ? "1" : "2"
    ).join("");
    for (const [i, seg] of segs.entries()) {
      if (seg === "*") {
        if (i !== segs.length - 1) {
          throw new Error(`Cannot add route ${pattern}: * must come last`);
        }
        cur = cur.rest ??= node();
      } else if (seg.startsWith(":")) {
        const name = seg.slice(1);
        if (cur.param && cur.param.name !== name) {
          throw new Error(
            `Cannot add route ${pattern}: parameter :${name} clashes with :${cur.param.name}`,
          );
        }
        cur.param ??= { name, node: node() };
        cur = cur.param.node;
      } else {
        let next = cur.statics.get(seg);
        if (!next) cur.statics.set(seg, next = node());
        cur = next;
      }
    }
    cur.handlers.set(method.toUpperCase(), handler);
    cur.specificity = specificity;
    return this;
  }

  /** Every registered `[method, pattern]`, e.g. for audits in tests. */
  *routes(): Generator<[string, string]> {
    const walk = function* (
      n: Node<H>,
      at: string,
    ): Generator<[string, string]> {
      for (const m of n.handlers.keys()) yield [m, at || "/"];
      for (const [seg, next] of n.statics) yield* walk(next, `${at}/${seg}`);
      if (n.param) yield* walk(n.param.node, `${at}/:${n.param.name}`);
      if (n.rest) yield* walk(n.rest, `${at}/*`);
    };
    yield* walk(this.#root, "");
  }

  /** Finds the handler for a method and a (still percent-encoded) path. */
  match(method: string, path: string): Match<H> {
    const params: Record<string, string> = {};
    const found = this.#walk(this.#root, path, skipSlashes(path, 0), params);
    if (!found) return { kind: "not_found" };
    const handler = found.handlers.get(method) ??
      (method === "HEAD" ? found.handlers.get("GET") : undefined);
    if (handler) {
      return {
        kind: "found",
        handler,
        params,
        specificity: found.specificity,
      };
    }
    const allow = [...found.handlers.keys()];
    if (allow.includes("GET") && !allow.includes("HEAD")) allow.push("HEAD");
    return { kind: "method_not_allowed", allow: allow.sort() };
  }

  /** Matches the segment of `path` at `i` (no split: this runs per request). */
  #walk(
    cur: Node<H>,
    path: string,
    i: number,
    params: Record<string, string>,
  ): Node<H> | undefined {
    if (i >= path.length) return cur.handlers.size > 0 ? cur : undefined;
    let end = path.indexOf("/", i);
    if (end < 0) end = path.length;
    const seg = path.slice(i, end);
    const next = skipSlashes(path, end);
    const stat = cur.statics.size > 0 ? cur.statics.get(seg) : undefined;
    if (stat) {
      const hit = this.#walk(stat, path, next, params);
      if (hit) return hit;
    }
    if (cur.param) {
      let value = seg;
      if (seg.includes("%")) {
        try {
          value = decodeURIComponent(seg);
        } catch {
          return undefined; // malformed percent-encoding: no route matches (404)
        }
        if (value.includes("\0")) return undefined;
      }
      const hit = this.#walk(cur.param.node, path, next, params);
      if (hit) {
        params[cur.param.name] = value;
        return hit;
      }
    }
    if (cur.rest && cur.rest.handlers.size > 0) {
      params["*"] = path.slice(i);
      return cur.rest;
    }
    return undefined;
  }
}

/** The index of the first character after any slashes at `i`. */
function skipSlashes(path: string, i: number): number {
  while (i < path.length && path.charCodeAt(i) === 47) i++;
  return i;
}
