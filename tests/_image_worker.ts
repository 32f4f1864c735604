/**
 * Test worker (tests/_images.ts): makes sample images and reads images back
 * with libvips, off the test's isolate (libvips' start-up code replaces the
 * `Worker` global of the isolate that loads it).
 *
 * @module
 */

// deno-lint-ignore no-import-prefix
import Vips from "npm:wasm-vips@0.0.19";

interface Scope {
  onmessage: ((e: MessageEvent<Ask>) => void) | null;
  postMessage(message: unknown): void;
}

/** What the test asks. */
type Ask =
  | {
    id: number;
    op: "make";
    format: string;
    width: number;
    height: number;
    frames: number;
  }
  | { id: number; op: "read"; bytes: Uint8Array; points: [number, number][] };

const scope = globalThis as unknown as Scope;
const loading = Vips({ dynamicLibraries: [] });

const SUFFIX: Record<string, string> = {
  jpeg: ".jpg",
  png: ".png",
  gif: ".gif",
  webp: ".webp",
};

scope.onmessage = async (e) => {
  const vips = await loading;
  const ask = e.data;
  try {
    if (ask.op === "make") {
      // Top half red, bottom half blue; later frames green.
      const half = (rgb: number[], h: number) =>
        vips.Image.black(ask.width, h, { bands: 3 }).add(rgb).cast("uchar");
      let img = half([255, 0, 0], ask.height / 2).join(
        half([0, 0, 255], ask.height / 2),
        "vertical",
      );
      for (let i = 1; i < ask.frames; i++) {
        img = img.join(half([0, 255, 0], ask.height), "vertical");
      }
      img = img.copy({ interpretation: "srgb" });
      if (ask.frames > 1) img.setInt("page-height", ask.height);
      const bytes = img.writeToBuffer(SUFFIX[ask.format]).slice();
      scope.postMessage({ id: ask.id, bytes });
      return;
    }
    const img = vips.Image.newFromBuffer(ask.bytes);
    const points = ask.points.map(([x, y]) => img.getpoint(x, y).slice(0, 3));
    scope.postMessage({
      id: ask.id,
      width: img.width,
      height: img.pageHeight,
      pages: img.getTypeof("n-pages") ? img.getInt("n-pages") : 1,
      loader: img.getString("vips-loader"),
      exif: img.getTypeof("exif-data") !== 0,
      points,
    });
  } catch (err) {
    scope.postMessage({ id: ask.id, error: String(err) });
  }
};
