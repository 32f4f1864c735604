/**
 * Bounded request-body reading: 415 on a wrong type, 413 past the cap
 * (before reading when `Content-Length` says so, else while streaming),
 * 408 when the body stalls or takes too long (`deadlines.ts`), 400 on
 * malformed or too deeply nested JSON.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { type BodyDeadlines, BodyWatch } from "./deadlines.ts";

/** Deepest nesting accepted in a JSON body. */
export const MAX_JSON_DEPTH = 32;

/** Media type of a request, lower-cased, without parameters ("" when absent). */
export function mediaType(req: Request): string {
  const ct = req.headers.get("content-type") ?? "";
  return ct.split(";", 1)[0].trim().toLowerCase();
}

/**
 * Reads at most `max` bytes of the body; throws `too_large` beyond it, and
 * the 408 when `bodies` (the app's body deadlines) expires the read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readBytes } from "moonbase/lib/http/body.ts";
 * const bytes = await readBytes(new Request("http://x", { method: "POST", body: "hi" }), 10);
 * assert.ok(bytes.length === 2);
 * ```
 */
export async function readBytes(
  req: Request,
  max: number,
  bodies?: BodyDeadlines,
): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw tooLarge(max);
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  const watch = new BodyWatch(reader, bodies);
  try {
    while (true) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch {
        if (watch.expired) throw watch.error();
        throw new MoonbaseError(
          "invalid",
          "Cannot read body: the connection was interrupted",
        );
      }
      watch.step(step.value?.length);
      const { done, value } = step;
      if (done) break;
      size += value.length;
      if (size > max) {
        // The 413 is the answer; a stream already closed may reject the cancel.
        await reader.cancel().catch(() => {});
        throw tooLarge(max);
      }
      chunks.push(value);
    }
  } finally {
    watch.done();
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

function tooLarge(max: number): MoonbaseError {
  return new MoonbaseError(
    "too_large",
    `Cannot read body: larger than ${max} bytes`,
  );
}

function depthOf(value: unknown, depth: number): number {
  if (depth > MAX_JSON_DEPTH || value === null || typeof value !== "object") {
    return depth;
  }
  let max = depth;
  for (const v of Array.isArray(value) ? value : Object.values(value)) {
    max = Math.max(max, depthOf(v, depth + 1));
    if (max > MAX_JSON_DEPTH) break;
  }
  return max;
}

/**
 * Parses JSON text into a value; malformed or too deep input is a 400.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJson } from "moonbase/lib/http/body.ts";
 * assert.ok((parseJson('{"a":1}') as { a: number }).a === 1);
 * ```
 */
export function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new MoonbaseError("invalid", "Cannot parse body: malformed JSON");
  }
  if (depthOf(value, 0) > MAX_JSON_DEPTH) {
    throw new MoonbaseError(
      "invalid",
      `Cannot parse body: nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
  return value;
}

/**
 * Reads a JSON object body (`application/json`), enforcing type, size and
 * depth, and the app's body deadlines (`bodies`, usually `ctx.app.bodies`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readJsonObject } from "moonbase/lib/http/body.ts";
 * const req = new Request("http://x", {
 *   method: "POST", body: '{"title":"hi"}', headers: { "content-type": "application/json" },
 * });
 * assert.ok((await readJsonObject(req, 1024)).title === "hi");
 * ```
 */
export async function readJsonObject(
  req: Request,
  max: number,
  bodies?: BodyDeadlines,
): Promise<Record<string, unknown>> {
  const type = mediaType(req);
  if (type !== "application/json") {
    throw new MoonbaseError(
      "unsupported_media_type",
      `Cannot read body: expected application/json, got ${
        type || "no content type"
      }`,
    );
  }
  const bytes = await readBytes(req, max, bodies);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new MoonbaseError("invalid", "Cannot parse body: not valid UTF-8");
  }
  if (text.trim() === "") {
    throw new MoonbaseError("invalid", "Cannot parse body: empty");
  }
  const value = parseJson(text);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new MoonbaseError(
      "invalid",
      "Cannot parse body: expected a JSON object",
    );
  }
  return value as Record<string, unknown>;
}
