/**
 * The one place that touches the linear-time regular-expression engine
 * (re2js, a pure-JavaScript port of RE2): matching takes time linear in the
 * input, so no pattern can backtrack catastrophically. Each pattern gets a
 * small DFA cache; past it the engine falls back to its NFA, still linear.
 *
 * @module
 */

// A full specifier, so mod.ts imports without Moonbase's import map.
// deno-lint-ignore no-import-prefix
import { RE2Set } from "npm:re2js@2.10.0";

/** DFA cache of one pattern, in bytes (re2js's default is 8 MiB per pattern). */
const DFA_MEMORY = 256 * 1024;

/** A compiled pattern: `test` searches like `RegExp.prototype.test`. */
export interface LinearRegex {
  /** Engine instructions; matching costs at most input length × size steps. */
  readonly size: number;
  test(value: string): boolean;
}

/**
 * Compiles an RE2-syntax pattern.
 *
 * @throws {Error} with the engine's reason when RE2 refuses the pattern
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compileLinear } from "moonbase/lib/schema/regex.ts";
 * const re = compileLinear("^(?:\\w|\\d)*$");
 * assert.ok(re.test("abc_12") && !re.test("1".repeat(50) + "!"));
 * ```
 */
export function compileLinear(re2Source: string): LinearRegex {
  const set = new RE2Set(RE2Set.UNANCHORED, 0, DFA_MEMORY);
  set.add(re2Source);
  set.compile();
  return {
    size: set.prog.numInst(),
    test: (value) => set.match(value).length > 0,
  };
}
