/**
 * "Test as": for the first records of an entity, whether a rule (the one
 * being edited, not only the stored one) lets a given caller — a guest or a
 * user — through one operation. Decided by the record service's own rule
 * engine and row reads, the way the API decides; nothing is ever written.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { type AuthValue, GUEST } from "../caller.ts";
import type { Entity } from "./entity.ts";
import type { Registry } from "./registry.ts";
import type { Operation, Rule, RuleMode } from "../schema/types.ts";
import type { RuleHelpers } from "../rules/evaluate.ts";
import { inspectExpression } from "../rules/inspect.ts";
import type { RecordData } from "./codec.ts";
import type { Access } from "./caller_access.ts";
import { ExpressionRules } from "./rule_engine.ts";
import { assertServed, authorize } from "./access.ts";
import { compiledOf } from "./rule_check.ts";
import type { RuleRequest } from "./rule_types.ts";

/** One record's outcome. */
export interface TrialItem {
  id: string;
  /** A short text to recognize the record by (its first text value). */
  label: string;
  allowed: boolean;
  /** What the API would answer this caller for this record when denied (lists: none, the row is absent). */
  status?: number;
  /** Why the rule failed on this record (an evaluation error), or an up-front denial. */
  error?: string;
}

/** The answer of `POST /api/v1/sys/rules/test`. */
export interface TrialResult {
  items: TrialItem[];
  as: { type: "guest" | "user"; id: string; entity: string };
  /** The denial when the decision does not depend on the record (else null). */
  denied: string | null;
  /** Lists, gets, updates and deletes under a record-reading rule: SQL or per row (else null). */
  compiled: "sql" | "per-row" | null;
  /** The request the rule saw: `req.method`, and `req.body` is `{}`. */
  request: { method: string; body: Record<string, never> };
}

/** What to test. */
export interface Trial {
  entity: Entity;
  op: Operation;
  rule: Rule;
  as: { entity: string; id: string } | null;
  limit: number;
}

const METHOD: Readonly<Record<Operation, string>> = {
  list: "GET",
  get: "GET",
  add: "POST",
  update: "PATCH",
  delete: "DELETE",
};

const MODES: readonly RuleMode[] = ["public", "auth", "", "custom"];

const bad = (why: string): never => {
  throw new MoonbaseError("invalid", `Cannot test rule: ${why}`);
};

/** The caller a trial runs as: a guest, or a user read fresh (without password). */
async function callerOf(
  registry: Registry,
  as: Trial["as"],
): Promise<AuthValue> {
  if (as === null) return GUEST;
  const e = registry.byName(as.entity);
  if (
    !e || e.name !== as.entity || e.type !== "auth" || e.isSystem || !e.hasApi
  ) {
    throw new MoonbaseError(
      "not_found",
      `Cannot find user: no auth entity ${
        JSON.stringify(as.entity.slice(0, 80))
      } (admins pass every rule; test as a guest or a user)`,
    );
  }
  const user = await e.read(as.id);
  if (!user) {
    throw new MoonbaseError(
      "not_found",
      `Cannot find user: no user ${
        JSON.stringify(as.id.slice(0, 80))
      } in ${e.name}`,
    );
  }
  return { id: as.id, entity: e.name, type: "user", user };
}

/** The status of a denial error (401 for guests, 403 otherwise). */
function statusOf(err: MoonbaseError): number {
  return err.code === "unauthenticated" ? 401 : 403;
}

/** A short label: the first non-empty text value that is not an id or date. */
function labelOf(entity: Entity, rec: RecordData): string {
  for (const f of entity.fields) {
    if (["id", "created", "updated", "password"].includes(f.name)) continue;
    const v = rec[f.name];
    if (typeof v === "string" && v.trim() !== "") return v.slice(0, 60);
  }
  return "";
}

/** The `Access` the rule being tried gives the caller. */
async function accessOf(
  t: Trial,
  engine: ExpressionRules,
  auth: AuthValue,
  req: RuleRequest,
): Promise<Access> {
  const d = authorize(t.entity, t.op, auth, t.rule);
  return d.kind === "allow"
    ? {}
    : await engine.access(t.entity, t.op, d.expr, auth, req);
}

/**
 * Runs a trial. Bounded: at most `limit` (≤ 50) records, one read each, the
 * expression limits of the parser; reads only.
 */
export async function runTrial(
  registry: Registry,
  helpers: RuleHelpers,
  t: Trial,
): Promise<TrialResult> {
  if (!MODES.includes(t.rule.mode)) {
    bad(
      `rule.mode ${
        JSON.stringify(t.rule.mode)
      }: use public, auth, "" or custom`,
    );
  }
  if (t.rule.mode === "custom") {
    const r = inspectExpression(
      t.rule.expr,
      "rule",
      new Set(),
      new Set(helpers.keys()),
    );
    if (!r.valid) bad(`${r.detail} at ${r.position}`);
  }
  if (t.entity.type === "view" && t.op !== "list" && t.op !== "get") {
    bad(`${t.entity.name} is a view; views are read-only (test list or get)`);
  }
  assertServed(t.entity, registry.viewRefusal(t.entity.id));
  const auth = await callerOf(registry, t.as);
  const method = METHOD[t.op];
  const req: RuleRequest = { body: {}, query: {}, method };
  let failure: string | undefined;
  const engine = new ExpressionRules(helpers, (err) => {
    failure = err instanceof Error ? err.message : String(err);
  });
  // Newest first; ids (UUIDv7, monotonic) order records made in the same
  // millisecond.
  const sortKey = t.entity.hasField("created")
    ? "-created,-id"
    : t.entity.hasField("id")
    ? "-id"
    : "";
  const page = await t.entity.list(
    new URLSearchParams({
      limit: String(t.limit),
      ...sortKey && { sort: sortKey },
    }),
  );
  const records = page.items as RecordData[];
  const out: TrialResult = {
    items: [],
    as: {
      type: auth.type === "user" ? "user" : "guest",
      id: auth.id,
      entity: auth.entity,
    },
    denied: null,
    compiled: null,
    request: { method, body: {} },
  };
  let access: Access;
  try {
    access = await accessOf(t, engine, auth, req);
  } catch (err) {
    if (!(err instanceof MoonbaseError)) throw err;
    out.denied = err.message;
    out.items = records.map((rec) => ({
      id: String(rec.id),
      label: labelOf(t.entity, rec),
      allowed: false,
      status: statusOf(err),
      error: err.message,
    }));
    return out;
  }
  const readsRows = t.op !== "add" && !!(access.where || access.keep);
  if (readsRows) out.compiled = compiledOf(access);
  // A view's ids need not be unique (a join repeats them, an outer join
  // leaves them null): reading a listed row back by id may find another
  // row, or none. A list decides each row itself, and so does the trial
  // (the rule's own per-row check, as the record service runs it).
  const rowCheck = readsRows && t.op === "list" && t.entity.type === "view"
    ? (await engine.access(t.entity, "add", t.rule.expr, auth, req)).check
    : undefined;
  for (const rec of records) {
    const id = String(rec.id);
    const item: TrialItem = {
      id,
      label: labelOf(t.entity, rec),
      allowed: true,
    };
    failure = undefined;
    if (rowCheck) {
      try {
        await rowCheck(rec, t.entity.reads);
      } catch (err) {
        if (!(err instanceof MoonbaseError)) throw err;
        item.allowed = false;
      }
    } else if (readsRows) {
      const seen = await t.entity.records.read(id, {
        access: { where: access.where, keep: access.keep },
      });
      if (!seen) {
        item.allowed = false;
        if (t.op !== "list") item.status = 404;
      }
    }
    if (item.allowed && access.check && (t.op === "add" || t.op === "update")) {
      try {
        await access.check(rec, t.entity.reads);
      } catch (err) {
        if (!(err instanceof MoonbaseError)) throw err;
        item.allowed = false;
        // Update: a record the rule refuses after the change answers 404.
        item.status = t.op === "update" ? 404 : statusOf(err);
      }
    }
    if (failure !== undefined) item.error = failure;
    out.items.push(item);
  }
  return out;
}
