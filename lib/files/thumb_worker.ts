/**
 * Worker that makes thumbnails with libvips (`npm:wasm-vips`, WebAssembly),
 * off the request thread: a JPEG, PNG, GIF (its first frame) or WebP in,
 * the same format out, at the size asked. Before anything is decoded it
 * reads the image's header and refuses an image above the pixel budget or
 * with absurd sides (a decompression bomb costs a few bytes and gigabytes
 * to decode), and a JPEG of more than `MAX_JPEG_SCANS` scans (each scan
 * is a pass over the whole image, before any deadline can stop it).
 * Metadata (EXIF: camera, GPS) is not copied into thumbnails.
 *
 * Messages: a `ThumbJob` → a `ThumbReply` with the same `id`. One job runs
 * at a time (libvips calls are synchronous here); the pool
 * (lib/files/thumb_pool.ts) sends the next only after the reply.
 *
 * libvips uses threads of its own (Emscripten pthreads): terminating this
 * worker does not stop them, so a job that runs past its deadline is
 * stopped from inside (`kill` on the image being written) and the worker
 * lives as long as its app.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix
import Vips from "npm:wasm-vips@0.0.19";
import {
  jpegScans,
  MAX_JPEG_SCANS,
  type ThumbFormat,
  thumbGeometry,
  type ThumbJob,
  type ThumbReply,
} from "./thumb_image.ts";

interface WorkerScope {
  onmessage: ((e: MessageEvent<ThumbJob>) => void) | null;
  postMessage(message: ThumbReply, transfer?: Transferable[]): void;
}

// Taken before libvips loads: its Node.js start-up code replaces globals
// (`Worker`) of the isolate it runs in.
const scope = globalThis as unknown as WorkerScope;

type Lib = Awaited<ReturnType<typeof Vips>>;

/** libvips, once loaded: only its own modules (no HEIF, JPEG XL or SVG). */
async function load(): Promise<Lib> {
  const vips = await Vips({ dynamicLibraries: [] });
  vips.Cache.max(0);
  // Only the four loaders thumbnails are made from (the bytes were sniffed
  // first; this is a second lock): no TIFF, PDF, matrix or raw files.
  vips.blockUntrusted(true);
  vips.operationBlock("VipsForeignLoad", true);
  for (
    const loader of [
      "VipsForeignLoadJpeg",
      "VipsForeignLoadPng",
      "VipsForeignLoadNsgif",
      "VipsForeignLoadWebp",
    ]
  ) vips.operationBlock(loader, false);
  return vips;
}

// Started at once, awaited by each job: a message that arrives while the
// module loads is not lost.
const loading = load();

const SAVE: Record<ThumbFormat, [string, Record<string, unknown>]> = {
  jpeg: [".jpg", { Q: 82, keep: 0 }],
  png: [".png", { keep: 0 }],
  gif: [".gif", { keep: 0 }],
  webp: [".webp", { Q: 80, keep: 0 }],
};

function make(vips: Lib, job: ThumbJob): ThumbReply {
  const started = performance.now();
  // libjpeg decodes every scan of a progressive JPEG before its first row
  // (past any deadline): one of very many scans is refused unread.
  if (
    job.format === "jpeg" &&
    jpegScans(job.bytes, MAX_JPEG_SCANS) > MAX_JPEG_SCANS
  ) {
    return { id: job.id, ok: false, reason: "too_large" };
  }
  let head: InstanceType<Lib["Image"]>;
  try {
    head = vips.Image.newFromBuffer(job.bytes, "", { access: "sequential" });
  } catch {
    return { id: job.id, ok: false, reason: "corrupt" };
  }
  let width: number, height: number, rotated: boolean;
  try {
    width = head.width;
    height = head.height;
    rotated = head.getTypeof("orientation") !== 0 &&
      head.getInt("orientation") >= 5;
  } finally {
    head.delete();
  }
  if (
    width > job.limits.maxSide || height > job.limits.maxSide ||
    width * height > job.limits.maxPixels
  ) {
    return { id: job.id, ok: false, reason: "too_large" };
  }
  const g = thumbGeometry(
    rotated ? height : width,
    rotated ? width : height,
    job.size,
  );
  // The scaled image is made before the crop: it is held to the budget too
  // (a 1 × 60000 strip cropped to a square would be scaled to gigapixels).
  if (g.width * g.height > job.limits.maxPixels) {
    return { id: job.id, ok: false, reason: "too_large" };
  }
  const scaled = vips.Image.thumbnailBuffer(job.bytes, g.width, {
    height: g.height,
    size: "force",
  });
  let out = scaled;
  try {
    if (g.crop) {
      out = scaled.extractArea(
        g.crop.left,
        g.crop.top,
        g.crop.width,
        g.crop.height,
      );
    }
    out.onProgress = () => {
      if (performance.now() - started > job.limits.deadlineMs) out.kill = true;
    };
    const [suffix, options] = SAVE[job.format];
    // A copy of its own (not a view of libvips' memory), to transfer.
    const bytes = out.writeToBuffer(suffix, options).slice();
    return {
      id: job.id,
      ok: true,
      bytes,
      width: out.width,
      height: out.height,
    };
  } catch {
    return {
      id: job.id,
      ok: false,
      reason: performance.now() - started > job.limits.deadlineMs
        ? "timeout"
        : "corrupt",
    };
  } finally {
    if (out !== scaled) out.delete();
    scaled.delete();
  }
}

scope.onmessage = async (e) => {
  let vips: Lib;
  try {
    vips = await loading;
  } catch {
    scope.postMessage({ id: e.data.id, ok: false, reason: "unavailable" });
    return;
  }
  let reply: ThumbReply;
  try {
    reply = make(vips, e.data);
  } catch {
    // libvips threw while reading the image (a truncated or broken file).
    reply = { id: e.data.id, ok: false, reason: "corrupt" };
  }
  scope.postMessage(reply, reply.ok ? [reply.bytes.buffer] : []);
};
