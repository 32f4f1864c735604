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

/**
 * Most scans a JPEG may have to be made into a thumbnail. A progressive
 * JPEG can hold any number of scans, and libjpeg passes over every block of
 * the image once per scan before the first row comes out (where no deadline
 * can stop it): a 400 kB file of 2 600 scans, each an end-of-band run over a
 * 40-megapixel image, holds a worker for minutes. Encoders write about 10.
 */
export const MAX_JPEG_SCANS = 100;

/**
 * The number of scans (SOS markers) of a JPEG, walked the way libjpeg reads
 * it (marker segments by their length, entropy-coded data up to the next
 * marker, nothing after EOI); counting stops past `stop`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jpegScans } from "moonbase/lib/files/thumb_image.ts";
 * const sos = [0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0, 0x12, 0xff, 0, 0x34];
 * const jpeg = new Uint8Array([0xff, 0xd8, ...sos, ...sos, 0xff, 0xd9, ...sos]);
 * assert.equal(jpegScans(jpeg), 2);
 * ```
 */
export function jpegScans(bytes: Uint8Array, stop = Infinity): number {
  let scans = 0;
  let i = 2; // after SOI
  while (i + 1 < bytes.length) {
    if (bytes[i] !== 0xff) { // entropy-coded data (or junk libjpeg skips)
      i++;
      continue;
    }
    const m = bytes[i + 1];
    if (m === 0xff) { // a fill byte
      i++;
      continue;
    }
    // A stuffed 0xFF, a restart marker, TEM or SOI: no length follows.
    if (m === 0x00 || m === 0x01 || m === 0xd8 || (m >= 0xd0 && m <= 0xd7)) {
      i += 2;
      continue;
    }
    if (m === 0xd9) break; // EOI: libjpeg reads no further
    if (m === 0xda && ++scans > stop) break;
    if (i + 3 >= bytes.length) break;
    const length = (bytes[i + 2] << 8) | bytes[i + 3];
    i += 2 + Math.max(2, length);
  }
  return scans;
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
