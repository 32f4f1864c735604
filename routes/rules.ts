/**
 * Rule tools for the dashboard (admin only): check an expression as it is
 * typed, list the names it may use, and test a rule as a guest or a user.
 *
 * @module
 */

import type { RouteTarget } from "../lib/http/route_group.ts";
import type { Core } from "../lib/core.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { json } from "../lib/http/envelope.ts";
import { ExpressionRules } from "../lib/records/rule_engine.ts";
import {
  checkExpression,
  ruleEntity,
  vocabularyOf,
} from "../lib/records/rule_check.ts";
import { runTrial } from "../lib/records/rule_trial.ts";
import {
  type Operation,
  OPERATIONS,
  type RuleMode,
} from "../lib/schema/types.ts";
import { guarded } from "../lib/http/route_group.ts";
import { requireAdmin } from "./guards.ts";

/** What these routes read of the app: the entities and the scripts' rule helpers. */
export type RulesHost = Pick<Core, "helpers" | "schemas">;

const invalid = (action: string, why: string): never => {
  throw new MoonbaseError("invalid", `Cannot ${action}: ${why}`);
};

/** Refuses keys other than `allowed`. */
function onlyKeys(
  body: Record<string, unknown>,
  allowed: string[],
  action: string,
): void {
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k)) {
      invalid(action, `unknown key ${JSON.stringify(k.slice(0, 40))}`);
    }
  }
}

function str(v: unknown, name: string, action: string): string {
  if (typeof v !== "string") invalid(action, `${name} must be a string`);
  return v as string;
}

/** Registers `/api/v1/sys/rules/{check,vocabulary,test}`. */
export function ruleRoutes(r: RouteTarget<RulesHost>): void {
  const admin = guarded(r, requireAdmin);
  admin.add("POST", "/api/v1/sys/rules/check", async (ctx) => {
    const body = await ctx.body();
    const action = "check rule";
    onlyKeys(body, ["entity", "expr", "kind", "completions"], action);
    const entity = ruleEntity(ctx.app.schemas, body.entity);
    const expr = str(body.expr ?? "", "expr", action);
    const kind = body.kind ?? "rule";
    if (kind !== "rule" && kind !== "filter") {
      invalid(action, 'kind must be "rule" or "filter"');
    }
    if (
      body.completions !== undefined && typeof body.completions !== "boolean"
    ) {
      invalid(action, "completions must be true or false");
    }
    const helpers = ctx.app.helpers;
    const names = new Set(helpers.keys());
    const result = await checkExpression(
      ctx.app.schemas,
      new ExpressionRules(helpers),
      names,
      entity,
      expr,
      kind as "rule" | "filter",
    );
    return json(200, {
      ...result,
      ...(body.completions === true &&
        { completions: vocabularyOf(ctx.app.schemas, names, entity) }),
    });
  });

  admin.add("GET", "/api/v1/sys/rules/vocabulary", (ctx) => {
    const name = ctx.url.searchParams.get("entity") ?? "";
    const entity = ruleEntity(ctx.app.schemas, name);
    const names = new Set(ctx.app.helpers.keys());
    return json(200, vocabularyOf(ctx.app.schemas, names, entity));
  });

  admin.add("POST", "/api/v1/sys/rules/test", async (ctx) => {
    const body = await ctx.body();
    const action = "test rule";
    onlyKeys(body, ["entity", "op", "rule", "as", "limit"], action);
    const entity = ruleEntity(ctx.app.schemas, body.entity);
    const op = body.op;
    if (!OPERATIONS.includes(op as Operation)) {
      invalid(action, `op must be one of ${OPERATIONS.join(", ")}`);
    }
    const rule = body.rule;
    if (rule === null || typeof rule !== "object" || Array.isArray(rule)) {
      invalid(action, "rule must be {mode, expr}");
    }
    const { mode = "", expr = "" } = rule as Record<string, unknown>;
    const as = body.as ?? null;
    if (
      as !== null &&
      (typeof as !== "object" || Array.isArray(as) ||
        typeof (as as Record<string, unknown>).entity !== "string" ||
        typeof (as as Record<string, unknown>).id !== "string")
    ) {
      invalid(action, "as must be null (a guest) or {entity, id} of a user");
    }
    const limit = body.limit ?? 20;
    if (
      typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 ||
      limit > 50
    ) {
      invalid(action, "limit must be an integer from 1 to 50");
    }
    const result = await runTrial(ctx.app.schemas, ctx.app.helpers, {
      entity,
      op: op as Operation,
      rule: {
        mode: str(mode, "rule.mode", action) as RuleMode,
        expr: str(expr, "rule.expr", action),
      },
      as: as as { entity: string; id: string } | null,
      limit: limit as number,
    });
    return json(200, result);
  });
}
