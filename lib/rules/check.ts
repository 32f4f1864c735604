/**
 * Save-time check of a custom rule expression: it must parse as a rule.
 *
 * @module
 */

import { RuleSyntaxError } from "./ast.ts";
import { parseExpression } from "./parser.ts";

/**
 * Returns a problem with the expression (the parser's message, with the
 * position), or undefined when it is acceptable. `helpers` are the helper
 * function names the rule may call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkRuleExpr } from "moonbase/lib/rules/check.ts";
 * assert.equal(checkRuleExpr("auth.id != ''"), undefined);
 * assert.equal(checkRuleExpr("auth.id = 1"), 'Cannot parse rule: unexpected "=" at 8');
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
    if (e instanceof RuleSyntaxError) return e.message;
    throw e;
  }
}
