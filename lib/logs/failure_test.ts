/**
 * Repeated failures: the first is written at once, the next ones at most
 * once per interval with the count of those not written, on a fake clock.
 *
 * @module
 */

import assert from "node:assert/strict";
import { FAILURE_LINE_EVERY, RepeatedFailure } from "./failure.ts";

function recorder(): {
  lines: Record<string, unknown>[];
  warn(message: string, data?: Record<string, unknown>): void;
} {
  const lines: Record<string, unknown>[] = [];
  return { lines, warn: (message, data) => lines.push({ message, ...data }) };
}

Deno.test("failure: a failure every second is one line per interval, counting the others", () => {
  const log = recorder();
  let now = 5_000;
  const f = new RepeatedFailure(log, "Cannot prune logs", { now: () => now });
  for (let i = 0; i < 1200; i++, now += 1000) {
    f.report(new Error(`database is locked ${i}`));
  }
  assert.deepEqual(log.lines, [
    { message: "Cannot prune logs", error: "database is locked 0" },
    {
      message: "Cannot prune logs",
      error: "database is locked 600",
      repeated: FAILURE_LINE_EVERY / 1000 - 1,
    },
  ]);
});

Deno.test("failure: a failure after a quiet interval is written at once, and non-errors are written as text", () => {
  const log = recorder();
  let now = 0;
  const f = new RepeatedFailure(log, "Cannot poll revocations", {
    everyMs: 100,
    now: () => now,
  });
  f.report("first");
  now = 250;
  f.report(42);
  assert.deepEqual(log.lines, [
    { message: "Cannot poll revocations", error: "first" },
    { message: "Cannot poll revocations", error: "42" },
  ]);
});
