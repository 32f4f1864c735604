/**
 * Inspecting an expression for an editor: parse it exactly as a schema save
 * (rules) or a list `filter` does, and on failure say where (a character
 * range to highlight); on success say what it reads.
 *
 * @module
 */

import { type Expr, RuleSyntaxError } from "./ast.ts";
import { TokenStream } from "./lexer.ts";
import type { KnownNames } from "./names.ts";
import { parseExpression } from "./parser.ts";
import { bindRelations } from "./relations.ts";

/** The outcome of parsing one expression. */
export type Inspection =
  | { valid: true; ast: Expr; reads: string[] }
  | {
    valid: false;
    /** The parser's message, e.g. `Cannot parse rule: unexpected "}" at 8`. */
    error: string;
    /** The message without prefix and position, e.g. `unexpected "}"`. */
    detail: string;
    /** 0-based offset of the problem. */
    position: number;
    /** Offset just after the offending token (at least `position + 1`). */
    end: number;
  };

/**
 * Parses `source` as a rule (`kind: "rule"`, roots `auth`, `req`, `record`)
 * or a list filter (`kind: "filter"`, bare `fields` and `auth`), with the
 * same parser, options and limits as the schema save and the list `filter`
 * parameter. `names` (rules): the members of `record` and `auth.user` a
 * rule may read, as a schema save checks them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inspectExpression } from "moonbase/lib/rules/inspect.ts";
 * const bad = inspectExpression("auth.id = 1", "rule");
 * assert.ok(!bad.valid && bad.position === 8 && bad.end === 9);
 * const ok = inspectExpression("record.owner == auth.id", "rule");
 * assert.deepEqual(ok.valid && ok.reads, ["record.owner", "auth.id"]);
 * ```
 */
export function inspectExpression(
  source: string,
  kind: "rule" | "filter",
  fields: ReadonlySet<string> = new Set(),
  helpers: ReadonlySet<string> = new Set(),
  names?: KnownNames,
): Inspection {
  try {
    const ast = parseExpression(source, {
      mode: kind,
      fields,
      helpers,
      names,
    });
    if (names?.shapes) {
      bindRelations(ast, names.shapes, { strict: true, what: kind });
    }
    return { valid: true, ast, reads: readsOf(ast) };
  } catch (err) {
    if (!(err instanceof RuleSyntaxError)) throw err;
    return {
      valid: false,
      error: err.message,
      detail: err.detail,
      position: err.position,
      end: tokenEnd(source, err.position, err.detail),
    };
  }
}

/**
 * The end of the token starting at `pos` (what to highlight): a name,
 * number, string or operator; one character when no token can be read there
 * (or past the end of the text).
 */
export function tokenEnd(source: string, pos: number, detail = ""): number {
  if (pos >= source.length) return pos + 1;
  if (detail === "unterminated string") {
    const nl = source.slice(pos).search(/[\r\n]/);
    return nl < 0 ? source.length : pos + Math.max(nl, 1);
  }
  try {
    const t = new TokenStream(source.slice(pos)).peek;
    return t.kind === "eof" || t.pos !== 0 ? pos + 1 : pos + t.end;
  } catch {
    // No token can be read there: one character, as documented above.
    return pos + 1;
  }
}

/**
 * The data paths an expression reads, in order of appearance, without
 * repeats: `record.owner`, `auth.user.team`, `req.body.status`, bare filter
 * fields (`title`, `meta.kind`), and helper calls as `name()`. A trailing
 * `.length` is left out (it reads the value before it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpression } from "moonbase/lib/rules/parser.ts";
 * import { readsOf } from "moonbase/lib/rules/inspect.ts";
 * const e = parseExpression("record.title.length > 2 && auth.id != ''", { mode: "rule" });
 * assert.deepEqual(readsOf(e), ["record.title", "auth.id"]);
 * ```
 */
export function readsOf(expr: Expr): string[] {
  const out = new Set<string>();
  const visit = (e: Expr): void => {
    switch (e.type) {
      case "root":
      case "field":
        out.add(e.name);
        return;
      case "member": {
        const path = pathOf(e);
        if (path !== undefined) out.add(path);
        else visit(e.object);
        return;
      }
      case "unary":
      case "textFunction":
        return visit(e.argument);
      case "binary":
      case "logical":
        visit(e.left);
        return visit(e.right);
      case "method":
        visit(e.object);
        return visit(e.argument);
      case "call":
        out.add(`${e.name}()`);
        return e.args.forEach(visit);
      case "quantifier":
        // `record.comments_via_post`; reads of its records are the parameter's.
        visit(e.object);
        return visit(e.body);
      case "relation":
        return visit(e.object);
      default:
        return;
    }
  };
  visit(expr);
  return [...out];
}

/** `a.b.c` for a member chain on a root or field (no `.length` at the end). */
function pathOf(e: Expr): string | undefined {
  const parts: string[] = [];
  let cur = e;
  while (cur.type === "member") {
    parts.unshift(cur.property);
    cur = cur.object;
  }
  if (cur.type !== "root" && cur.type !== "field") return undefined;
  if (parts[parts.length - 1] === "length") parts.pop();
  return [cur.name, ...parts].join(".");
}
