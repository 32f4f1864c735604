/// <reference lib="dom" />
/**
 * What the rule input talks to the server about: the live check of an
 * expression (`POST /sys/rules/check`), the names it may use
 * (`GET /sys/rules/vocabulary`, cached per entity) and the completions for
 * the word before the caret.
 *
 * @module
 */

import { mb } from "../mb.ts";

/** Rule (roots `record`, `auth`, `req`) or list filter (bare field names). */
export type ExprKind = "rule" | "filter";

/** The server's verdict on an expression. */
export type CheckResult =
  | { valid: true; compiled: "sql" | "per-row"; reads: string[] }
  | {
    valid: false;
    error: string;
    detail: string;
    /** 0-based offset of the problem. */
    position: number;
    /** Offset just after the offending token. */
    end: number;
  };

/** Names for completions, as the server lists them. */
export interface Vocabulary {
  record: string[];
  auth: string[];
  req: string[];
  helpers: string[];
  methods: string[];
}

/**
 * Asks the server whether `expr` is valid; rejects with an `AbortError` once
 * `signal` is aborted (also when the abort lands while the body is read).
 */
export async function checkExpr(
  entity: string,
  expr: string,
  kind: ExprKind,
  signal?: AbortSignal,
): Promise<CheckResult> {
  const r = await mb.send<CheckResult>("POST", "/api/v1/sys/rules/check", {
    body: { entity, expr, kind },
    signal,
  });
  if (signal?.aborted) {
    throw new DOMException("The check was superseded", "AbortError");
  }
  return r;
}

const cache = new Map<string, Promise<Vocabulary>>();

/** The vocabulary of an entity (fetched once per page load). */
export function vocabulary(entity: string): Promise<Vocabulary> {
  let v = cache.get(entity);
  if (!v) {
    v = mb.send<Vocabulary>("GET", "/api/v1/sys/rules/vocabulary", {
      query: { entity },
    });
    // A failed load is not kept (the next call asks again); callers get the
    // error through `v` itself.
    v.catch(() => cache.delete(entity));
    cache.set(entity, v);
  }
  return v;
}

/** Forgets cached vocabularies (after a schema change). */
export function forgetVocabulary(): void {
  cache.clear();
}

/** Every name that may be typed, for this kind of expression. */
export function candidates(v: Vocabulary, kind: ExprKind): string[] {
  const helpers = v.helpers.map((h) => `${h}(`);
  const literals = ["true", "false", "null"];
  if (kind === "filter") {
    return [...v.record, "auth.", ...v.auth, ...helpers, ...literals];
  }
  return [
    "record.",
    "auth.",
    "auth.user.",
    "req.",
    "req.body.",
    ...v.record.map((f) => `record.${f}`),
    ...v.auth,
    ...v.req,
    ...helpers,
    ...literals,
  ];
}

/** The word being typed just before `caret` (names and dots), or "". */
export function wordBefore(text: string, caret: number): string {
  const m = /[A-Za-z_$][\w$]*(?:\.[\w$]*)*$/.exec(text.slice(0, caret));
  if (!m) return "";
  // Not inside a string literal: an odd number of quotes before it.
  const before = text.slice(0, m.index);
  const quotes = (before.match(/["']/g) ?? []).length;
  return quotes % 2 === 0 ? m[0] : "";
}

/**
 * Completions for `word`: names that start with it (case-insensitive,
 * itself left out), and methods after a known name and a dot
 * (`record.title.` → `record.title.startsWith(`). At most `max`.
 */
export function complete(
  all: string[],
  methods: string[],
  word: string,
  max = 12,
): string[] {
  if (word === "") return [];
  const w = word.toLowerCase();
  const out = all.filter((n) => n.toLowerCase().startsWith(w) && n !== word);
  const dot = word.lastIndexOf(".");
  if (dot > 0 && all.includes(word.slice(0, dot))) {
    const base = word.slice(0, dot);
    const rest = word.slice(dot).toLowerCase();
    for (const m of methods) {
      if (m.toLowerCase().startsWith(rest)) out.push(base + m);
    }
  }
  return [...new Set(out)].slice(0, max);
}
