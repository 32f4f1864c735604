/**
 * Field patterns: the one home of their limits. A pattern is JavaScript
 * syntax (`u` mode) run by a linear-time engine (./regex.ts), so a value can
 * never make it backtrack. Limits: the pattern's length and engine size (at
 * save time), each matched value's length, and the pattern work of one
 * record (value length × pattern size, summed over its fields).
 *
 * @module
 */

import { compileLinear, type LinearRegex } from "./regex.ts";
import { PatternSyntaxError, toRe2Syntax } from "./regex_translate.ts";

/** Longest pattern source accepted. */
export const MAX_PATTERN_LENGTH = 512;
/** Largest compiled pattern (engine instructions: the cost per character). */
export const MAX_PATTERN_SIZE = 2000;
/** Longest value matched against a pattern (UTF-16 code units). */
export const MAX_MATCHED_LENGTH = 10_000;
/** Pattern work of one record: Σ value length × pattern size (~0.1 s at most). */
export const RECORD_PATTERN_BUDGET = 10_000_000;

type Compiled = { ok: true; re: LinearRegex } | { ok: false; reason: string };

// Compiled once per pattern source (schemas are few; the cap only guards churn).
// Process-wide on purpose: the result depends only on the pattern text, so
// apps of one process can share it and nothing of one app leaks to another.
const cache = new Map<string, Compiled>();
const CACHE_CAP = 1000;

function compile(source: string): Compiled {
  if (source.length > MAX_PATTERN_LENGTH) {
    return {
      ok: false,
      reason: `longer than ${MAX_PATTERN_LENGTH} characters`,
    };
  }
  try {
    new RegExp(source, "u"); // the syntax users write; never run here
  } catch {
    return { ok: false, reason: "not a valid regular expression" };
  }
  let re: LinearRegex;
  try {
    const translated = toRe2Syntax(source);
    // Refused before compiling: expanding huge repeats takes long itself.
    if (translated.size > 4 * MAX_PATTERN_SIZE) {
      return tooComplex(translated.size);
    }
    re = compileLinear(translated.re2);
  } catch (e) {
    const why = e instanceof PatternSyntaxError
      ? e.message
      : `not supported by the linear-time engine (${
        String((e as Error)?.message ?? e).replace(
          /^error parsing regexp: /,
          "",
        )
          .slice(0, 120)
      })`;
    return { ok: false, reason: why };
  }
  return re.size > MAX_PATTERN_SIZE ? tooComplex(re.size) : { ok: true, re };
}

const tooComplex = (size: number): Compiled => ({
  ok: false,
  reason:
    `too complex (about ${size} engine steps per character, at most ${MAX_PATTERN_SIZE}); lower its repeat counts`,
});

function compiled(source: string): Compiled {
  let c = cache.get(source);
  if (c === undefined) {
    if (cache.size >= CACHE_CAP) cache.clear();
    c = compile(source);
    cache.set(source, c);
  }
  return c;
}

/**
 * Why a field pattern cannot be accepted, or `undefined` when it can (the
 * check a schema save runs; it also compiles the pattern for later use).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { patternProblem } from "moonbase/lib/schema/patterns.ts";
 * assert.equal(patternProblem("^(\\w|\\d)*$"), undefined);
 * assert.match(patternProblem("(a)\\1") ?? "", /backreferences/);
 * assert.match(patternProblem("(?=a)") ?? "", /lookahead/);
 * ```
 */
export function patternProblem(source: string): string | undefined {
  const c = compiled(source);
  return c.ok ? undefined : c.reason;
}

// The pattern work of the record being checked. A module counter, yet never
// shared between records, requests or apps: every caller resets it and then
// checks one record's values synchronously (no await in between), so no
// other code runs before the record's check is over.
let spent = 0;

/**
 * Starts the pattern budget of one record. Record checks are synchronous, so
 * a module counter is exact; call it before checking a record's values.
 */
export function resetPatternBudget(): void {
  spent = 0;
}

/**
 * Checks a value against a field pattern: `undefined` when it matches,
 * otherwise the message of a 400 (no match, value too long, record budget
 * spent, or a stored pattern this engine refuses).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { patternMismatch } from "moonbase/lib/schema/patterns.ts";
 * assert.equal(patternMismatch("^[a-z0-9_]+$", "moon_base"), undefined);
 * assert.ok(patternMismatch("^\\d*\\d*\\d*$", "1".repeat(5000) + "x"));
 * ```
 */
export function patternMismatch(
  source: string,
  value: string,
): string | undefined {
  const c = compiled(source);
  if (!c.ok) {
    return `Cannot check against the pattern (${c.reason}): an admin must change it`;
  }
  if (value.length > MAX_MATCHED_LENGTH) {
    return `Too long to check against the pattern (${MAX_MATCHED_LENGTH} characters at most)`;
  }
  spent += value.length * c.re.size;
  if (spent > RECORD_PATTERN_BUDGET) {
    return "Too much text to check against patterns in one record: send shorter values";
  }
  return c.re.test(value) ? undefined : "Does not match the required pattern";
}
