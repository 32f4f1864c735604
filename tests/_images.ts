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
