/**
 * Validation of an entity's `rules` input (POST/PATCH bodies of the schemas
 * API): one `{mode, expr}` per operation, a custom expression checked by the
 * rule language (`SchemaContext.checkExpr`). Every problem is a 400 that
 * names the offending key.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { OPERATIONS, type Rule, type RuleMode, type Rules } from "./types.ts";
import type { SchemaContext } from "./validate.ts";

const MODES: readonly RuleMode[] = ["public", "auth", "", "custom"];

function fail(message: string): never {
  throw new MoonbaseError("invalid", message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * Validates a `rules` object; missing operations default to admin-only.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validateRules } from "moonbase/lib/schema/validate_rules.ts";
 * const ctx = { entityType: () => undefined, checkExpr: () => undefined };
 * const rules = validateRules({ list: { mode: "public", expr: "" } }, ctx);
 * assert.ok(rules.list.mode === "public" && rules.get.mode === "");
 * ```
 */
export function validateRules(
  raw: unknown,
  ctx: SchemaContext,
  base?: Rules,
): Rules {
  if (raw === undefined || raw === null) raw = {};
  if (!isObject(raw)) fail("Cannot accept rules: must be an object");
  for (const key of Object.keys(raw)) {
    if (!OPERATIONS.includes(key as never)) {
      fail(
        `Cannot accept rules: unknown operation "${key}" (use ${
          OPERATIONS.join(", ")
        })`,
      );
    }
  }
  const out = {} as Rules;
  for (const op of OPERATIONS) {
    const r = raw[op];
    if (r === undefined) {
      out[op] = base?.[op] ?? { mode: "", expr: "" };
      continue;
    }
    out[op] = validateRule(r, op, ctx);
  }
  return out;
}

function validateRule(r: unknown, op: string, ctx: SchemaContext): Rule {
  if (!isObject(r)) fail(`Cannot accept rules.${op}: must be {mode, expr}`);
  for (const key of Object.keys(r)) {
    if (key !== "mode" && key !== "expr") {
      fail(`Cannot accept rules.${op}: unknown key "${key}"`);
    }
  }
  const mode = r.mode ?? "";
  if (!MODES.includes(mode as RuleMode)) {
    fail(
      `Cannot accept rules.${op}.mode ${
        JSON.stringify(mode)
      }: use public, auth, "" or custom`,
    );
  }
  const expr = r.expr ?? "";
  if (typeof expr !== "string") {
    fail(`Cannot accept rules.${op}.expr: must be a string`);
  }
  if (mode !== "custom") {
    if (expr.trim() !== "") {
      fail(
        `Cannot accept rules.${op}.expr: only mode "custom" takes an expression`,
      );
    }
    return { mode: mode as RuleMode, expr: "" };
  }
  if (expr.trim() === "") {
    fail(`Cannot accept rules.${op}.expr: mode "custom" needs an expression`);
  }
  const problem = ctx.checkExpr(expr);
  if (problem) fail(`Cannot accept rules.${op}.expr: ${problem}`);
  return { mode: "custom", expr };
}
