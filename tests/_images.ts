/**
 * Sample images for the thumbnail suites, and reading images back (their
 * size, format, frames and the colour at some points), with libvips on a
 * worker (tests/_image_worker.ts).
 *
 * @module
 */

/** The formats thumbnails are made of. */
export const FORMATS = ["jpeg", "png", "gif", "webp"] as const;
export type Format = typeof FORMATS[number];

/** What reading an image tells. */
export interface ImageInfo {
  width: number;
  height: number;
  /** Frames (1 for a still image). */
  pages: number;
  /** libvips' loader, e.g. `jpegload_buffer`. */
  loader: string;
  /** Whether it carries EXIF metadata. */
  exif: boolean;
  /** RGB at each point asked. */
  points: number[][];
}

/** A libvips worker for one test file. */
export class Images {
  #worker = new Worker(new URL("./_image_worker.ts", import.meta.url).href, {
    type: "module",
  });
  #next = 0;
  #waiting = new Map<number, (v: Record<string, unknown>) => void>();

  constructor() {
    this.#worker.onmessage = (e: MessageEvent<Record<string, unknown>>) => {
      const id = e.data.id as number;
      this.#waiting.get(id)?.(e.data);
      this.#waiting.delete(id);
    };
  }

  #ask(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, (v) => {
        if (typeof v.error === "string") reject(new Error(v.error));
        else resolve(v);
      });
      this.#worker.postMessage({ ...message, id });
    });
  }

  /**
   * An image of `width` × `height` (even), top half red and bottom half
   * blue; with `frames` > 1 an animation whose later frames are green.
   */
  async make(
    format: Format,
    width: number,
    height: number,
    frames = 1,
  ): Promise<Uint8Array> {
    const r = await this.#ask({ op: "make", format, width, height, frames });
    return r.bytes as Uint8Array;
  }

  /** Reads an image: its size, format and the colours at `points`. */
  async read(
    bytes: Uint8Array,
    points: [number, number][] = [],
  ): Promise<ImageInfo> {
    return await this.#ask({
      op: "read",
      bytes,
      points,
    }) as unknown as ImageInfo;
  }

  /** Ends the worker. */
  close(): void {
    this.#worker.terminate();
  }
}

/** Whether an RGB colour is mostly red, green or blue. */
export function hue(rgb: number[]): "red" | "green" | "blue" | "other" {
  const [r, g, b] = rgb;
  if (r > 180 && g < 80 && b < 80) return "red";
  if (g > 180 && r < 80 && b < 80) return "green";
  if (b > 180 && r < 80 && g < 80) return "blue";
  return "other";
}

/**
 * A grey progressive JPEG of `width` × `height` with `1 + 63 × (refinements
 * + 1)` scans: the DC, then each AC coefficient on its own with
 * `refinements` successive-approximation passes, every AC scan one
 * end-of-band run over the whole image (a few bytes a scan, a pass over
 * every block to decode). 13 refinements is the most a valid file holds
 * (883 scans); 0 gives 64 scans.
 */
export function progressiveJpeg(
  width: number,
  height: number,
  refinements: number,
): Uint8Array<ArrayBuffer> {
  const out: number[] = [];
  const u16 = (n: number) => out.push((n >> 8) & 0xff, n & 0xff);
  out.push(0xff, 0xd8);
  out.push(0xff, 0xdb); // one quantization table of ones
  u16(67);
  out.push(0, ...new Array(64).fill(1));
  out.push(0xff, 0xc2); // progressive, 8-bit, one component
  u16(11);
  out.push(8);
  u16(height);
  u16(width);
  out.push(1, 1, 0x11, 0);
  // Huffman tables of one code ("0"): DC difference 0; AC EOB run (EOB14).
  const one = [1, ...new Array(15).fill(0)];
  out.push(0xff, 0xc4);
  u16(2 + 2 * 18);
  out.push(0x00, ...one, 0x00, 0x10, ...one, 0xe0);
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan = (ss: number, ah: number, al: number, codes: number[][]) => {
    out.push(0xff, 0xda);
    u16(8);
    out.push(1, 1, 0x00, ss, ss, (ah << 4) | al);
    let acc = 0, n = 0;
    const put = (bits: number, count: number) => {
      for (let i = count - 1; i >= 0; i--) {
        acc = (acc << 1) | ((bits >> i) & 1);
        if (++n === 8) {
          out.push(acc);
          if (acc === 0xff) out.push(0); // stuffed
          acc = n = 0;
        }
      }
    };
    for (const [bits, count] of codes) put(bits, count);
    while (n !== 0) put(1, 1);
  };
  scan(0, 0, 0, new Array(blocks).fill([0, 1]));
  // EOB14 with 14 one bits: a run of 32767 blocks.
  const runs = new Array(Math.ceil(blocks / 32767)).fill([0x3fff, 15]);
  for (let k = 1; k <= 63; k++) {
    for (let al = refinements; al >= 0; al--) {
      scan(k, al === refinements ? 0 : al + 1, al, runs);
    }
  }
  out.push(0xff, 0xd9);
  return new Uint8Array(out);
}
