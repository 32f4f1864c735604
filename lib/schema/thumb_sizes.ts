/**
 * Thumbnail sizes: `<W>x<H>[t|b|f]` as in `?thumb=` and a file field's
 * `thumbs` list. `100x100` covers the box and crops from the centre, `t` /
 * `b` crop from the top / bottom, `f` fits inside the box; `0x100` and
 * `100x0` keep the image's ratio. Each side is at most `MAX_THUMB_SIDE`
 * pixels and not both are 0; a ratio-keeping size takes no letter.
 *
 * @module
 */

/** The largest side of a thumbnail, in pixels. */
export const MAX_THUMB_SIDE = 4096;

/** How a thumbnail fills its box. */
export type ThumbMode = "center" | "top" | "bottom" | "fit";

/** A parsed thumbnail size (`width` or `height` 0: keep the ratio). */
export interface ThumbSize {
  width: number;
  height: number;
  mode: ThumbMode;
  /** Its canonical text, e.g. `100x100t` (what a field's `thumbs` lists). */
  text: string;
}

const SIZE = /^(0|[1-9][0-9]{0,3})x(0|[1-9][0-9]{0,3})([tbf]?)$/;

const MODES: Record<string, ThumbMode> = {
  "": "center",
  t: "top",
  b: "bottom",
  f: "fit",
};

/**
 * Parses a thumbnail size; a string saying what is wrong when it is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseThumbSize } from "moonbase/lib/schema/thumb_sizes.ts";
 * assert.deepEqual(parseThumbSize("100x50t"), { width: 100, height: 50, mode: "top", text: "100x50t" });
 * assert.equal(typeof parseThumbSize("0x0"), "string");
 * assert.equal(typeof parseThumbSize("5000x10"), "string");
 * assert.equal(typeof parseThumbSize("0x100f"), "string");
 * ```
 */
export function parseThumbSize(text: string): ThumbSize | string {
  const m = SIZE.exec(text);
  if (!m) {
    return `${
      JSON.stringify(text.slice(0, 32))
    } is not a size; write <width>x<height> with an optional t, b or f (e.g. "100x100", "640x0", "200x200f")`;
  }
  const width = Number(m[1]), height = Number(m[2]);
  if (width > MAX_THUMB_SIDE || height > MAX_THUMB_SIDE) {
    return `${text} is too large; each side is at most ${MAX_THUMB_SIDE}`;
  }
  if (width === 0 && height === 0) {
    return `${text} has no size; give a width, a height, or both`;
  }
  if ((width === 0 || height === 0) && m[3] !== "") {
    return `${text} keeps the ratio (a side is 0) and takes no ${m[3]}`;
  }
  return { width, height, mode: MODES[m[3]], text };
}
