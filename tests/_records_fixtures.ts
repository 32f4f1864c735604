/**
 * Fixtures of the records and files browser tests: a blog schema with
 * every field type, seeded posts, and a real PNG made on the spot.
 */
import { Buffer } from "node:buffer";
import type { TestServer } from "./_server.ts";
import { poll } from "./_wait.ts";

/** Creates `authors` and `posts` (every field type; admin-only rules). */
export async function setupBlog(s: TestServer): Promise<string> {
  const token = await s.adminToken();
  const mk = async (body: unknown) => {
    const r = await s.request("POST", "/api/v1/schemas", { token, body });
    if (r.status !== 201) throw new Error(`schema: ${r.status} ${r.text}`);
  };
  await mk({
    name: "authors",
    type: "base",
    fields: [{ name: "name", type: "string", required: true }],
  });
  await mk({
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string", required: true },
      { name: "body", type: "text" },
      { name: "views", type: "int" },
      { name: "score", type: "double" },
      { name: "published", type: "bool" },
      { name: "when", type: "date" },
      { name: "meta", type: "json" },
      { name: "status", type: "select", values: ["draft", "published"] },
      {
        name: "author",
        type: "relation",
        foreign_key: { entity: "authors", on_delete: "set null" },
      },
      { name: "cover", type: "file", mime_types: ["image/*"] },
      { name: "attachments", type: "files", max: 5 },
    ],
  });
  return token;
}

/** Adds `n` posts titled `Post 01`… with `views` 1…n. */
export async function seedPosts(s: TestServer, n: number): Promise<void> {
  const token = await s.adminToken();
  for (let i = 1; i <= n; i++) {
    const r = await s.request("POST", "/api/v1/entities/posts", {
      token,
      body: {
        title: `Post ${String(i).padStart(2, "0")}`,
        body: i % 2 ? "odd body text" : "even body text",
        views: i,
        published: i % 3 === 0,
        meta: { i },
      },
    });
    if (r.status !== 201) throw new Error(`post: ${r.status} ${r.text}`);
  }
}

const CRC = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** A `size`×`size` PNG of one colour (RGB). */
export async function makePng(
  size = 24,
  rgb: [number, number, number] = [47, 91, 211],
): Promise<Buffer> {
  const raw = new Uint8Array(size * (1 + size * 3));
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 3);
    for (let x = 0; x < size; x++) raw.set(rgb, row + 1 + x * 3);
  }
  const z = new Uint8Array(
    await new Response(
      new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate")),
    ).arrayBuffer(),
  );
  const head = new Uint8Array(13);
  const hv = new DataView(head.buffer);
  hv.setUint32(0, size);
  hv.setUint32(4, size);
  head.set([8, 2, 0, 0, 0], 8);
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", head),
    chunk("IDAT", z),
    chunk("IEND", new Uint8Array()),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return Buffer.from(out);
}

/** A text file for `setInputFiles`. */
export function textFile(
  name: string,
  text: string,
): { name: string; mimeType: string; buffer: Buffer } {
  return { name, mimeType: "text/plain", buffer: Buffer.from(text) };
}

/** Waits until an image element has loaded real pixels. */
export async function imageLoads(
  img: { evaluate<R>(fn: (el: unknown) => R): Promise<R> },
): Promise<boolean> {
  return await poll(
    "the image's pixels",
    async () =>
      await img.evaluate((el) =>
        (el as { naturalWidth: number }).naturalWidth
      ) > 0,
    { deadline: 5000, every: 100 },
  ).catch(() => false);
}
