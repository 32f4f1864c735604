/**
 * Guarding field patterns against catastrophic backtracking.
 *
 * @module
 */

/**
 * True for regular expressions that can backtrack catastrophically: a
 * quantified group containing a quantifier (`(a+)+`, `(a|a*)*`, `(\\w+\\s?)*`),
 * or a backreference. Conservative: some safe patterns are refused too.
 *
 * @example
 * ```ts
 * import { riskyPattern } from "moonbase/lib/schema/patterns.ts";
 * console.assert(riskyPattern("^(a+)+$") && !riskyPattern("^[a-z0-9-]{1,40}$"));
 * ```
 */
export function riskyPattern(pattern: string): boolean {
  if (/\\[1-9k]/.test(pattern)) return true;
  // Strip escapes and character classes, then look for a quantified group holding a quantifier.
  const plain = pattern.replace(/\\./g, "x").replace(
    /\[(?:[^\]\\]|\\.)*\]/g,
    "x",
  );
  const stack: boolean[] = [];
  for (let i = 0; i < plain.length; i++) {
    const c = plain[i];
    if (c === "(") stack.push(false);
    else if (c === ")") {
      const inner = stack.pop() ?? false;
      const next = plain[i + 1];
      const quantified = next === "*" || next === "+" || next === "{" ||
        next === "?";
      if (inner && quantified && next !== "?") return true;
      if (stack.length > 0 && (inner || quantified)) {
        stack[stack.length - 1] = true;
      }
    } else if ((c === "*" || c === "+" || c === "{") && stack.length > 0) {
      stack[stack.length - 1] = true;
    }
  }
  return false;
}
