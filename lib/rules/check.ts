/**
 * Save-time check of a custom rule expression.
 *
 * @module
 */

/**
 * Returns a problem with the expression, or undefined when it is acceptable.
 *
 * @example
 * ```ts
 * import { checkRuleExpr } from "./lib/rules/check.ts";
 * console.assert(checkRuleExpr("auth.id != ''") === undefined);
 * ```
 */
export function checkRuleExpr(expr: string): string | undefined {
  if (expr.length > 4096) return "expression longer than 4096 characters";
  return undefined;
}
