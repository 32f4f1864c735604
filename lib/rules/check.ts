/**
 * Save-time check of a custom rule expression: it must parse as a rule, and
 * (given the known names) read only fields that exist.
 *
 * @module
 */

import { RuleSyntaxError } from "./ast.ts";
import type { KnownNames } from "./names.ts";
import { parseExpression } from "./parser.ts";
import { bindRelations } from "./relations.ts";

/**
 * What is wrong with a rule: what and where (`unexpected "}" at 12`: the
 * caller says what it could not do) and, when the problem is a member that
 * does not exist, its name as written (`record.autor`).
 */
export interface RuleProblem {
  message: string;
  unknown?: string;
}

/**
 * The problem with the expression, or undefined when it is acceptable.
 * `helpers` are the helper function names the rule may call; `names`, when
 * given, the members of `record` and `auth.user` it may read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ruleProblem } from "moonbase/lib/rules/check.ts";
 * const names = { record: new Set(["id", "author"]), user: new Set(["id"]) };
 * assert.deepEqual(ruleProblem("record.autor == auth.id", new Set(), names), {
 *   message: 'unknown name "record.autor" (did you mean "record.author"?) at 7',
 *   unknown: "record.autor",
 * });
 * assert.equal(ruleProblem("record.author == auth.id", new Set(), names), undefined);
 * ```
 */
export function ruleProblem(
  expr: string,
  helpers: ReadonlySet<string> = new Set(),
  names?: KnownNames,
): RuleProblem | undefined {
  try {
    const ast = parseExpression(expr, { mode: "rule", helpers, names });
    if (names?.shapes) bindRelations(ast, names.shapes, { strict: true });
    return undefined;
  } catch (e) {
    if (!(e instanceof RuleSyntaxError)) throw e;
    const message = `${e.detail} at ${e.position}`;
    return e.unknown === undefined
      ? { message }
      : { message, unknown: e.unknown };
  }
}

/**
 * Returns a problem with the expression (what is wrong and where, e.g.
 * `unexpected "}" at 12`: the caller says what it could not do), or
 * undefined when it is acceptable. `helpers` are the helper function names
 * the rule may call; `names`, when given, the members of `record` and
 * `auth.user` it may read.
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
 * const names = { record: new Set(["id", "author"]), user: new Set(["id"]) };
 * assert.equal(
 *   checkRuleExpr("record.autor == auth.id", new Set(), names),
 *   'unknown name "record.autor" (did you mean "record.author"?) at 7',
 * );
 * ```
 */
export function checkRuleExpr(
  expr: string,
  helpers: ReadonlySet<string> = new Set(),
  names?: KnownNames,
): string | undefined {
  return ruleProblem(expr, helpers, names)?.message;
}
