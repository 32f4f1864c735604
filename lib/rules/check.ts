/**
 * Save-time check of a custom rule expression: it must parse as a rule.
 *
 * @module
 */

import { RuleSyntaxError } from "./ast.ts";
import { parseExpression } from "./parser.ts";

/**
 * Returns a problem with the expression (what is wrong and where, e.g.
 * `unexpected "}" at 12`: the caller says what it could not do), or
 * undefined when it is acceptable. `helpers` are the helper
 * function names the rule may call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRuleExpr } from "moonbase/lib/rules/check.ts";
 * assert.equal(checkRuleExpr("auth.id != ''"), undefined);
 * assert.equal(
 *   checkRuleExpr("auth.id = 1"),
 *   'unexpected "=" (to compare, write "==") at 8',
 * );
 * ```
 */
export function checkRuleExpr(
  expr: string,
  helpers: ReadonlySet<string> = new Set(),
): string | undefined {
  try {
    parseExpression(expr, { mode: "rule", helpers });
    return undefined;
  } catch (e) {
    if (e instanceof RuleSyntaxError) return `${e.detail} at ${e.position}`;
    throw e;
  }
}
