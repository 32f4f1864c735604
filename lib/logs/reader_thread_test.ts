import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MoonbaseError } from "../errors.ts";
import { ReaderThread } from "./reader_thread.ts";

/** A reader thread's module from source (a stand-in for reader_worker.ts). */
const moduleOf = (source: string) =>
  "data:application/javascript," + encodeURIComponent(source);

/**
 * Answers every read with its instance's id, dies on `{entry: "die"}` and
 * never answers `{entry: "hold"}`.
 */
const STAND_IN = moduleOf(`
const me = crypto.randomUUID();
self.onmessage = (e) => {
  if (e.data.entry === "die") throw new Error("the reader broke");
  if (e.data.entry === "hold") return;
  self.postMessage({ id: e.data.id, result: me });
};
`);

Deno.test("a failed read rejects with the typed error the reader thread sent", async () => {
  const dir = await Deno.makeTempDir();
  const empty = `${dir}/empty.db`;
  new DatabaseSync(empty).close();
  const typed = new ReaderThread(empty);
  const missing = new ReaderThread(`${dir}/missing.db`);
  try {
    // No log table: the storage's own mapping (a 409, retry), as on the
    // request thread.
    await assert.rejects(typed.read({ entry: "x" }), (err) => {
      assert.ok(err instanceof MoonbaseError);
      assert.equal(err.code, "conflict");
      return true;
    });
    // A driver's own failure: no MoonbaseError (a 500, reported).
    await assert.rejects(missing.read({ entry: "x" }), (err) => {
      assert.ok(!(err instanceof MoonbaseError));
      assert.match(String(err), /^Error: Cannot read logs: unable to open/);
      return true;
    });
    // The thread lives on after a failed read.
    await assert.rejects(typed.read({ entry: "y" }), MoonbaseError);
  } finally {
    typed.close();
    missing.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a dead reader thread fails its reads with a 503; the next read starts another", async () => {
  const reader = new ReaderThread("unused.db", STAND_IN);
  try {
    const first = await reader.read<string>({ entry: "a" });
    const held = reader.read({ entry: "hold" });
    const dying = reader.read({ entry: "die" });
    for (const read of [held, dying]) {
      await assert.rejects(read, (err) => {
        assert.ok(err instanceof MoonbaseError);
        assert.equal(err.code, "unavailable");
        assert.equal(
          err.message,
          "Cannot read logs: the log reader thread stopped; try again",
        );
        assert.match(String(err.cause), /the reader broke/);
        return true;
      });
    }
    const next = await reader.read<string>({ entry: "b" });
    assert.equal(typeof next, "string");
    assert.notEqual(next, first, "answered by a new thread");
  } finally {
    reader.close();
  }
});

Deno.test("closing fails the reads waiting and every read after", async () => {
  const reader = new ReaderThread("unused.db", STAND_IN);
  const held = reader.read({ entry: "hold" });
  reader.close();
  const stopping = (err: unknown) => {
    assert.ok(err instanceof MoonbaseError);
    assert.equal(err.code, "unavailable");
    assert.equal(err.message, "Cannot read logs: the server is stopping");
    return true;
  };
  await assert.rejects(held, stopping);
  await assert.rejects(reader.read({ entry: "a" }), stopping);
});
