/**
 * Unit tests of thumbnail making below HTTP: the worker refuses images whose
 * header promises more pixels than the budget (decompression bombs) before
 * decoding them, answers "corrupt" for broken images, stops at its
 * deadline, and the pool refuses at once (503) past its queue.
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../errors.ts";
import { parseThumbSize, type ThumbSize } from "../schema/thumb_sizes.ts";
import {
  imageFormat,
  jpegScans,
  MAX_JPEG_SCANS,
  type ThumbLimits,
} from "./thumb_image.ts";
import { progressiveJpeg } from "../../tests/_images.ts";
import { ThumbPool, type ThumbResult } from "./thumb_pool.ts";

const LIMITS: ThumbLimits = {
  maxPixels: 40_000_000,
  maxSide: 65_535,
  deadlineMs: 10_000,
};

const size = (text: string) => parseThumbSize(text) as ThumbSize;

function crc32(bytes: Uint8Array): number {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

async function zlib(
  bytes: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(
    new CompressionStream("deflate"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * A grey PNG of `width` × `height`; `pixels: false` writes only the header
 * and an empty image stream (a bomb's header is all the worker may read).
 */
async function png(
  width: number,
  height: number,
  pixels = true,
): Promise<Uint8Array<ArrayBuffer>> {
  const ihdr = new Uint8Array(13);
  const v = new DataView(ihdr.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  ihdr.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = new Uint8Array(pixels ? (width + 1) * height : 1);
  rows.fill(0x80);
  for (let y = 0; pixels && y < height; y++) rows[y * (width + 1)] = 0;
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", await zlib(rows)),
    chunk("IEND", new Uint8Array(0)),
  ];
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

/**
 * A GIF whose screen and frame say `width` × `height`, with the pixel data
 * of one pixel.
 */
function gifBomb(width: number, height: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array([
    ...new TextEncoder().encode("GIF89a"),
    width & 0xff,
    width >> 8,
    height & 0xff,
    height >> 8,
    0x80, // a global colour table of 2 entries
    0,
    0,
    0,
    0,
    0,
    255,
    255,
    255,
    0x2c, // the frame, at 0, 0
    0,
    0,
    0,
    0,
    width & 0xff,
    width >> 8,
    height & 0xff,
    height >> 8,
    0,
    2,
    2,
    0x44,
    0x01,
    0,
    0x3b,
  ]);
  return b;
}

async function make(
  pool: ThumbPool,
  bytes: Uint8Array<ArrayBuffer>,
  text = "100x100",
): Promise<ThumbResult | undefined> {
  const format = imageFormat(bytes);
  assert.ok(format, "a sample image");
  return await pool.make(format, size(text), () => Promise.resolve(bytes));
}

Deno.test("thumbnails: bombs are refused from their header; broken images are corrupt", async (t) => {
  const pool = new ThumbPool({ concurrency: 1, queue: 8, limits: LIMITS });
  try {
    await t.step("a real PNG is made into a thumbnail", async () => {
      const r = await make(pool, await png(300, 200));
      assert.ok(r?.ok, JSON.stringify(r));
      assert.deepEqual([r.width, r.height], [100, 100]);
      assert.equal(imageFormat(r.bytes), "png");
    });
    const refused: [string, () => Promise<Uint8Array<ArrayBuffer>>, string][] =
      [
        [
          "a GIF of 65535 × 65535 (4 gigapixels)",
          () => Promise.resolve(gifBomb(65535, 65535)),
          "too_large",
        ],
        [
          "a PNG header of 20000 × 20000 (400 megapixels)",
          () => png(20000, 20000, false),
          "too_large",
        ],
        [
          "a PNG header of 100000 × 10 (absurd side)",
          () => png(100_000, 10, false),
          "too_large",
        ],
        [
          "a 1 × 60000 strip cropped square (scaled to 6 gigapixels)",
          () => png(1, 60_000),
          "too_large",
        ],
        ["a JPEG signature then junk", () =>
          Promise.resolve(
            new Uint8Array([0xff, 0xd8, 0xff, 0xe0, ...new Uint8Array(500)]),
          ), "corrupt"],
        [
          "a PNG cut after its header",
          async () => (await png(300, 200)).slice(0, 40),
          "corrupt",
        ],
      ];
    for (const [what, bytes, reason] of refused) {
      await t.step(`${what}: ${reason}`, async () => {
        const r = await make(pool, await bytes());
        assert.deepEqual(r && !r.ok ? r.reason : r, reason);
      });
    }
    await t.step(
      "after all that the worker still makes thumbnails",
      async () => {
        const r = await make(pool, await png(40, 40), "0x20");
        assert.ok(r?.ok);
        assert.deepEqual([r.width, r.height], [20, 20]);
      },
    );
  } finally {
    pool.close();
  }
});

Deno.test("thumbnails: the pixel budget is the configured one", async () => {
  const pool = new ThumbPool({
    concurrency: 1,
    queue: 1,
    limits: { ...LIMITS, maxPixels: 50_000 },
  });
  try {
    const over = await make(pool, await png(300, 200));
    assert.deepEqual(over && !over.ok && over.reason, "too_large");
    const under = await make(pool, await png(200, 200));
    assert.ok(under?.ok);
  } finally {
    pool.close();
  }
});

Deno.test("thumbnails: a job past its deadline stops with timeout", async () => {
  const pool = new ThumbPool({
    concurrency: 1,
    queue: 1,
    limits: { ...LIMITS, deadlineMs: 0 },
  });
  try {
    const r = await make(pool, await png(2000, 2000), "4000x4000");
    assert.deepEqual(r && !r.ok ? r.reason : r, "timeout");
  } finally {
    pool.close();
  }
});

Deno.test("thumbnails: past the queue a request is refused at once with 503", async () => {
  const pool = new ThumbPool({ concurrency: 1, queue: 1, limits: LIMITS });
  try {
    const bytes = await png(300, 200);
    const first = make(pool, bytes.slice());
    const second = make(pool, bytes.slice(), "50x50");
    const third = await make(pool, bytes.slice(), "60x60").then(
      () => undefined,
      (err) => err,
    );
    assert.ok(third instanceof MoonbaseError, String(third));
    assert.equal(third.code, "unavailable");
    assert.equal(third.headers["Retry-After"], "2");
    assert.ok((await first)?.ok);
    assert.ok((await second)?.ok, "the queued one is made after the first");
  } finally {
    pool.close();
  }
});

Deno.test("thumbnails: a JPEG of very many scans is refused unread", async () => {
  // Each scan of a progressive JPEG is a pass over every block before the
  // first row comes out (no deadline stops it); 2 600 of them over 40
  // megapixels held a worker for minutes.
  const pool = new ThumbPool({ concurrency: 1, queue: 1, limits: LIMITS });
  try {
    const few = progressiveJpeg(640, 640, 0);
    assert.equal(jpegScans(few), 64);
    const ok = await make(pool, few);
    assert.ok(ok?.ok, "64 scans: made");
    const many = progressiveJpeg(640, 640, 1);
    assert.equal(jpegScans(many), 127);
    assert.ok(127 > MAX_JPEG_SCANS);
    const r = await make(pool, many);
    assert.deepEqual(r && !r.ok ? r.reason : r, "too_large");
  } finally {
    pool.close();
  }
});

Deno.test("thumbnails: a hung job answers timeout (remembered), not unavailable", async () => {
  // "unavailable" is not remembered: the same image would start a new
  // worker on every request, each hung one's libvips threads running on.
  const pool = new ThumbPool({
    concurrency: 1,
    queue: 1,
    limits: LIMITS,
    hungMs: 1,
  });
  try {
    const r = await make(pool, await png(300, 200));
    assert.deepEqual(r && !r.ok ? r.reason : r, "timeout");
  } finally {
    pool.close();
  }
});
