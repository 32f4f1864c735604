/**
 * InstanceSync's polls against services whose database is gone: every poll
 * fails, the log gets one line per kind, not one per poll.
 *
 * @module
 */

import assert from "node:assert/strict";
import { InstanceSync } from "./sync.ts";
import type { Storage } from "./db/storage.ts";
import type { Registry } from "./records/registry.ts";
import type { Revocations } from "./auth/revocation.ts";

Deno.test("sync: polls that keep failing are one log line, not one a poll", async () => {
  let polls = 0;
  const revocations = {
    poll: () => {
      polls++;
      return Promise.reject(new Error("Connection terminated"));
    },
  } as unknown as Revocations;
  const schemas = {
    refreshIfChanged: () => Promise.resolve(),
  } as unknown as Registry;
  const storage = { dialect: { name: "sqlite" } } as unknown as Storage;
  const lines: Record<string, unknown>[] = [];
  const sync = new InstanceSync(storage, schemas, revocations, undefined, {
    warn: (message, data) => lines.push({ message, ...data }),
  });
  sync.setPolling({ revocations: 5, schemas: 0 });
  await sync.start();
  try {
    const deadline = Date.now() + 10_000;
    while (polls < 5 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.ok(polls >= 5, `only ${polls} polls`);
  } finally {
    await sync.close();
  }
  assert.deepEqual(lines, [
    { message: "Cannot poll revocations", error: "Connection terminated" },
  ]);
});
