/**
 * Send progress of streamed responses (file downloads): a body made by
 * `trackedResponse` notes each time the server asks it for more data. The
 * connection sweeper closes a connection whose streamed response asked for
 * nothing during the idle timeout — its client stopped reading ("slow
 * read") and would otherwise hold the connection, and a slot under the
 * cap, for ever. Responses with a fixed body need no tracking: once handed
 * over they fall under the idle timeout already.
 *
 * @module
 */

const pulls = new WeakMap<Response, { last: number }>();

/**
 * A response streaming `body` whose send progress the server watches.
 *
 * @example
 * ```ts
 * import { lastPull, trackedResponse } from "moonbase/lib/http/progress.ts";
 * import assert from "node:assert/strict";
 * const res = trackedResponse(new Blob(["hi"]).stream(), { status: 200 });
 * const before = lastPull(res) ?? 0;
 * assert.equal(await res.text(), "hi");
 * assert.ok((lastPull(res) ?? 0) >= before);
 * ```
 */
export function trackedResponse(
  body: ReadableStream<Uint8Array>,
  init: ResponseInit,
): Response {
  const p = { last: performance.now() };
  const reader = body.getReader();
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      p.last = performance.now();
      const r = await reader.read();
      p.last = performance.now();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  const res = new Response(stream, init);
  pulls.set(res, p);
  return res;
}

/** When the server last asked a tracked response for data (performance.now()). */
export function lastPull(res: Response): number | undefined {
  return pulls.get(res)?.last;
}
