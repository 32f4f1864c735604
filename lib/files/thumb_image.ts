/**
 * What a thumbnail is made of, below any storage: which image formats have
 * thumbnails (by their leading bytes), the geometry of a size on an image
 * (scale, then crop), and the messages to and from the worker that makes
 * them (lib/files/thumb_worker.ts).
 *
 * @module
 */

import type { ThumbSize } from "../schema/thumb_sizes.ts";
import { MAX_THUMB_SIDE } from "../schema/thumb_sizes.ts";
import { sniff } from "./sniff.ts";

/** The formats thumbnails are made of (and in: a thumbnail keeps its format). */
export type ThumbFormat = "jpeg" | "png" | "gif" | "webp";

const FORMATS: Record<string, ThumbFormat> = {
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
};

/** The file extension of each format's thumbnails. */
export const THUMB_EXTENSION: Record<ThumbFormat, string> = {
  jpeg: "jpg",
  png: "png",
  gif: "gif",
  webp: "webp",
};

/**
 * The thumbnail format of a file by its leading bytes (at least 12), or
 * undefined when it is not a JPEG, PNG, GIF or WebP.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { imageFormat } from "moonbase/lib/files/thumb_image.ts";
 * assert.equal(imageFormat(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), "jpeg");
 * assert.equal(imageFormat(new TextEncoder().encode("<svg></svg>")), undefined);
 * ```
 */
export function imageFormat(head: Uint8Array): ThumbFormat | undefined {
  return FORMATS[sniff(head)];
}

/** Limits of one thumbnail's making. */
export interface ThumbLimits {
  /** Most pixels (width × height) of an image decoded. */
  maxPixels: number;
  /** Longest side of an image decoded. */
  maxSide: number;
  /** Milliseconds the worker may spend on one thumbnail. */
  deadlineMs: number;
}

/** A thumbnail to make: the original's bytes, its format, the size. */
export interface ThumbJob {
  id: number;
  bytes: Uint8Array<ArrayBuffer>;
  format: ThumbFormat;
  size: ThumbSize;
  limits: ThumbLimits;
}

/** Why no thumbnail was made. */
export type ThumbRefusal = "too_large" | "corrupt" | "timeout" | "unavailable";

/** The worker's answer to a `ThumbJob`. */
export type ThumbReply =
  | {
    id: number;
    ok: true;
    bytes: Uint8Array<ArrayBuffer>;
    width: number;
    height: number;
  }
  | { id: number; ok: false; reason: ThumbRefusal };

/** How an image is scaled (to `width` × `height`), then cropped. */
export interface ThumbGeometry {
  width: number;
  height: number;
  crop?: { left: number; top: number; width: number; height: number };
}

/**
 * The scale and crop of `size` on an image of `w` × `h` (as displayed, after
 * its EXIF rotation). A crop size covers the box, then keeps its centre, top
 * or bottom (the middle across); `f` fits inside; a 0 side keeps the ratio,
 * the other side capped at `MAX_THUMB_SIDE`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { thumbGeometry } from "moonbase/lib/files/thumb_image.ts";
 * import { parseThumbSize, type ThumbSize } from "moonbase/lib/schema/thumb_sizes.ts";
 * const size = (t: string) => parseThumbSize(t) as ThumbSize;
 * assert.deepEqual(thumbGeometry(400, 200, size("100x100")), { width: 200, height: 100, crop: { left: 50, top: 0, width: 100, height: 100 } });
 * assert.deepEqual(thumbGeometry(200, 400, size("100x100b")).crop, { left: 0, top: 100, width: 100, height: 100 });
 * assert.deepEqual(thumbGeometry(400, 200, size("100x100f")), { width: 100, height: 50 });
 * assert.deepEqual(thumbGeometry(400, 200, size("0x50")), { width: 100, height: 50 });
 * assert.deepEqual(thumbGeometry(100, 20000, size("50x0")), { width: 20, height: 4096 });
 * ```
 */
export function thumbGeometry(
  w: number,
  h: number,
  size: ThumbSize,
): ThumbGeometry {
  const side = (n: number) => Math.max(1, Math.round(n));
  if (size.width === 0 || size.height === 0) {
    let width = size.width || side(w * size.height / h);
    let height = size.height || side(h * size.width / w);
    if (width > MAX_THUMB_SIDE) {
      height = side(height * MAX_THUMB_SIDE / width);
      width = MAX_THUMB_SIDE;
    }
    if (height > MAX_THUMB_SIDE) {
      width = side(width * MAX_THUMB_SIDE / height);
      height = MAX_THUMB_SIDE;
    }
    return { width, height };
  }
  if (size.mode === "fit") {
    const scale = Math.min(size.width / w, size.height / h);
    return { width: side(w * scale), height: side(h * scale) };
  }
  const scale = Math.max(size.width / w, size.height / h);
  const width = Math.max(size.width, side(w * scale));
  const height = Math.max(size.height, side(h * scale));
  const top = size.mode === "top"
    ? 0
    : size.mode === "bottom"
    ? height - size.height
    : Math.floor((height - size.height) / 2);
  return {
    width,
    height,
    crop: {
      left: Math.floor((width - size.width) / 2),
      top,
      width: size.width,
      height: size.height,
    },
  };
}
