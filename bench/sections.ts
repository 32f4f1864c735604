/**
 * Sections of bench/results.md that separate runs write (realtime, soak):
 * each between `<!-- key:start -->` and `<!-- key:end -->` markers, so a
 * later run replaces its own section and keeps the rest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { extract, splice, wrap } from "moonbase/bench/sections.ts";
 * const one = splice("# R\n\n## End\n", "s", wrap("s", "A\n"), "## End");
 * assert.equal(one, "# R\n\n<!-- s:start -->\nA\n<!-- s:end -->\n\n## End\n");
 * const two = splice(one, "s", wrap("s", "B\n"), "## End");
 * assert.equal(extract(two, "s"), "<!-- s:start -->\nB\n<!-- s:end -->");
 * ```
 *
 * @module
 */

const marks = (key: string) =>
  [`<!-- ${key}:start -->`, `<!-- ${key}:end -->`] as const;

/** `body` between the markers of `key`. */
export function wrap(key: string, body: string): string {
  const [start, end] = marks(key);
  return `${start}\n${body.trimEnd()}\n${end}\n`;
}

/** The section of `key` in `report` with its markers, if it has one. */
export function extract(report: string, key: string): string | undefined {
  const [start, end] = marks(key);
  const a = report.indexOf(start), b = report.indexOf(end, a);
  return a >= 0 && b > a ? report.slice(a, b + end.length) : undefined;
}

/**
 * `report` with the section of `key` replaced by `block` (a `wrap` result);
 * with none yet, `block` goes before the text `before` (or at the end).
 */
export function splice(
  report: string,
  key: string,
  block: string,
  before: string,
): string {
  const old = extract(report, key);
  if (old !== undefined) return report.replace(old, () => block.trimEnd());
  const at = before ? report.indexOf(before) : -1;
  return at < 0
    ? `${report.trimEnd()}\n\n${block}`
    : `${report.slice(0, at)}${block}\n${report.slice(at)}`;
}
