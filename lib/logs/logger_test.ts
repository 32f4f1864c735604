/**
 * The logger's hand-off, against a store that records what it is given and
 * answers when told: batches wait for the timer (they stay large however
 * fast the store answers), one batch at a time, a full queue drops with a
 * counter whose notice is written, flush and close write everything, in
 * order.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Logger } from "./logger.ts";
import { pause, poll } from "../../tests/_wait.ts";
import type { LogStore } from "./store.ts";
import { type PackedChunk, readChunk } from "./packed.ts";
import type { LogEntry } from "./types.ts";

/** What a test looks at of a packed entry. */
type Row = { seq: number; path: string | null };

/** A store whose inserts are recorded and finish when `release` is called. */
class HeldStore {
  batches: { entries: LogEntry[]; packed: Row[] }[] = [];
  hold = false;
  #waiting: (() => void)[] = [];

  insert(entries: LogEntry[], packed?: PackedChunk): Promise<void> {
    const rows: Row[] = [];
    if (packed) {
      readChunk(
        packed,
        (n, at, s) => rows.push({ seq: n[at + 1], path: s[1] }),
      );
    }
    this.batches.push({ entries, packed: rows });
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Lets the inserts in progress finish. */
  release(): void {
    for (const done of this.#waiting.splice(0)) done();
  }

  get requests(): number {
    return this.batches.reduce((n, b) => n + b.packed.length, 0);
  }
}

function logger(store: HeldStore, level: "info" | "error" = "info"): Logger {
  return new Logger(store as unknown as LogStore, level, "off");
}

function hit(log: Logger, n: number, from = 0): void {
  for (let i = from; i < from + n; i++) {
    log.request("info", "GET", `/p${i}`, 200, 1, "::1", null, null, `r${i}`);
  }
}

Deno.test("logger: entries reach the store on the timer, no flush", async () => {
  const store = new HeldStore();
  const log = logger(store);
  hit(log, 3);
  assert.equal(store.batches.length, 0, "nothing is written synchronously");
  await poll("three entries written", () => store.requests >= 3, { every: 5 });
  assert.equal(store.requests, 3);
  assert.equal(store.batches.length, 1, "one batch");
  await log.close();
});

Deno.test("logger: a batch in progress holds the next one until the timer", async () => {
  const store = new HeldStore();
  store.hold = true;
  const log = logger(store);
  hit(log, 1);
  await poll("a first batch", () => store.batches.length >= 1, { every: 2 });
  // Entries arriving while the first batch is written go on together.
  for (let i = 0; i < 10; i++) {
    hit(log, 30, 1 + i * 30);
    await pause(1);
  }
  store.release();
  store.hold = false;
  await pause(0);
  assert.equal(store.batches.length, 1, "no batch right after the answer");
  await poll("301 entries written", () => store.requests >= 301, { every: 2 });
  assert.equal(store.batches.length, 2, "the 300 waiting went as one batch");
  assert.equal(store.batches[1].packed.length, 300);
  await log.close();
});

Deno.test("logger: a writer that fell behind catches up without waiting", async () => {
  const store = new HeldStore();
  store.hold = true;
  const log = logger(store);
  hit(log, 1);
  await poll("a first batch", () => store.batches.length >= 1, { every: 2 });
  hit(log, 2500, 1);
  store.hold = false;
  store.release();
  // The full batches waiting go at once: 1 000 + 1 000, then the rest of
  // 500 on the timer.
  await pause(0);
  await pause(0);
  assert.ok(store.batches.length >= 2, `${store.batches.length} batches`);
  assert.equal(store.batches[1].packed.length, 1000);
  await log.close();
  assert.equal(store.requests, 2501);
});

Deno.test("logger: a full queue drops with a counter, and says so", async () => {
  const store = new HeldStore();
  const log = logger(store);
  hit(log, 25_000);
  log.warn("after the flood");
  await log.flush();
  assert.equal(store.requests, 20_000, "the queue keeps 20 000 entries");
  const notices = store.batches.flatMap((b) => b.entries)
    .filter((e) => e.message === "log queue full: entries dropped");
  assert.equal(notices.length, 1);
  assert.deepEqual(notices[0].data, { dropped: 5001 });
  // The queue has room again.
  hit(log, 10);
  await log.close();
  assert.equal(store.requests, 20_010);
});

Deno.test("logger: flush and close write everything, in order", async () => {
  const store = new HeldStore();
  store.hold = true;
  const log = logger(store);
  hit(log, 5);
  await poll("a first batch", () => store.batches.length >= 1, { every: 2 });
  hit(log, 2200, 5);
  log.info("last");
  const closed = log.close();
  store.hold = false;
  store.release();
  await closed;
  assert.equal(store.requests, 2205);
  const rows = store.batches.flatMap((b) => b.packed);
  const seqs = rows.map((r) => r.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "arrival order");
  assert.deepEqual(
    rows.map((r) => r.path),
    Array.from({ length: 2205 }, (_, i) => `/p${i}`),
  );
  const entries = store.batches.flatMap((b) => b.entries);
  assert.deepEqual(entries.map((e) => e.message), ["last"]);
});

Deno.test("logger: entries under the level are neither queued nor counted", async () => {
  const store = new HeldStore();
  const log = logger(store, "error");
  assert.equal(log.enabled("info"), false);
  hit(log, 30_000);
  log.warn("no");
  log.error("yes");
  await log.close();
  assert.equal(store.requests, 0);
  assert.deepEqual(
    store.batches.flatMap((b) => b.entries).map((e) => e.message),
    ["yes"],
  );
});

Deno.test("logger: a logger without a store keeps printing", async () => {
  const lines: string[] = [];
  const write = Deno.stdout.writeSync;
  Deno.stdout.writeSync = (b: Uint8Array) => {
    lines.push(new TextDecoder().decode(b));
    return b.length;
  };
  try {
    const log = new Logger(undefined, "info", "json");
    for (let i = 0; i < 3; i++) {
      log.info(`n${i}`);
      await log.flush();
    }
    await log.close();
  } finally {
    Deno.stdout.writeSync = write;
  }
  const messages = lines.join("").trim().split("\n").map((l) =>
    JSON.parse(l).message
  );
  assert.deepEqual(messages, ["n0", "n1", "n2"]);
});

Deno.test("logger: pretty console lines show requests and events in order", async () => {
  const lines: string[] = [];
  const write = Deno.stdout.writeSync;
  Deno.stdout.writeSync = (b: Uint8Array) => {
    lines.push(new TextDecoder().decode(b));
    return b.length;
  };
  try {
    const log = new Logger(undefined, "info", "pretty");
    log.request("info", "GET", "/a/é", 200, 1.25, "::1", "u1", "users", "r1");
    log.info("between");
    log.request("warn", "POST", "/b", 404, 2, null, null, null, "r2");
    await log.close();
  } finally {
    Deno.stdout.writeSync = write;
  }
  const out = lines.join("").trim().split("\n").map((l) => l.slice(19));
  assert.deepEqual(out, [
    "GET /a/é 200 1.3ms ::1 users/u1",
    "between",
    "POST /b 404 2.0ms",
  ]);
});

Deno.test("logger: a store that fails every batch is one stderr line, not one a batch", async () => {
  const lines: string[] = [];
  const write = Deno.stderr.writeSync;
  Deno.stderr.writeSync = (b: Uint8Array) => {
    lines.push(new TextDecoder().decode(b));
    return b.length;
  };
  const broken = {
    insert: () => Promise.reject(new Error("disk I/O error")),
  };
  try {
    const log = new Logger(broken as unknown as LogStore, "info", "off");
    for (let i = 0; i < 5; i++) {
      log.info(`n${i}`);
      await log.flush();
    }
    await log.close();
  } finally {
    Deno.stderr.writeSync = write;
  }
  assert.deepEqual(lines, ["moonbase: cannot write logs: disk I/O error\n"]);
});
