/**
 * Attack on the start-up sweep (lib/files/sweep.ts): a second server
 * started on a data directory and database that a running server uses
 * (several processes on one SQLite file are supported, as several
 * instances on one PostgreSQL are; or a second `deno task start` by
 * mistake, which fails on the port only after its start-up work) must not
 * remove the file of an upload the running server is still receiving.
 * Before the fix the second start removed it on SQLite (no grace period),
 * and on PostgreSQL once the upload had run 15 minutes (allowed by a longer
 * `--bodyDeadline`): the upload then committed a record whose file answered
 * 404.
 *
 * @module
 */

import { join } from "node:path";
import { createApp } from "../mod.ts";
import type { AppConfig } from "../lib/config.ts";
import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import {
  createEntity,
  getFile,
  multipart,
  PUBLIC,
  toReply,
  walk,
} from "./_files_fixtures.ts";
import { poll } from "./_wait.ts";

/**
 * Starts an upload on `s` and holds its last bytes; once its file is on
 * disk (recorded `agedMs` ago), starts and stops a second server on the
 * same directory and database; then finishes the upload and checks its
 * file is served whole.
 */
async function survivesSecondStart(
  s: TestServer,
  entityId: string,
  agedMs: number,
  config: AppConfig,
): Promise<void> {
  const content = "y".repeat(8192);
  const m = multipart([{ name: "doc", filename: "slow.txt", data: content }]);
  // Everything but the last bytes: the server is streaming the file.
  const cut = m.body.length - 64;
  let send!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      send = c;
      c.enqueue(m.body.slice(0, cut));
    },
  });
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    headers: { "content-type": m.type },
    body,
    duplex: "half",
  };
  const upload = fetch(`${s.url}/api/v1/entities/docs`, init);
  const dir = join(s.dataDir, "files", entityId);
  const before = new Set(await walk(dir).catch(() => [] as string[]));
  const name = await poll("the upload's file on disk", async () => {
    const names = await walk(dir).catch(() => [] as string[]);
    return names.find((n) => !before.has(n));
  }, { deadline: 30_000 });
  if (agedMs > 0) {
    // An upload that started that long ago (a large file, a long deadline).
    const n = await s.app.storage.run(
      `UPDATE "mb_files" SET "created" = "created" - ? WHERE "name" = ?`,
      [agedMs, name],
    );
    assertEquals(n, 1, "recorded before it was written");
  }
  const second = await createApp({
    quiet: true,
    jwtSecret: TEST_JWT_SECRET,
    ...config,
    dataDir: s.dataDir,
    ...(s.db === "postgres"
      ? { database: "PSQL", connection: s.connection }
      : {}),
  });
  await second.close();

  send.enqueue(m.body.slice(cut));
  send.close();
  const r = await toReply(await upload);
  assertStatus(r, 201, "the upload completes");
  assertEquals(r.data.doc, name, "the record holds the file written");
  const g = await getFile(s, `/api/files/docs/${name}`);
  assertEquals(g.status, 200, "the file is still there");
  assert(g.text === content, "whole");
}

forEachDb(
  "attack: a second server's start-up sweep spares an upload in flight",
  async (t, db) => {
    const config: AppConfig = { bodyDeadline: 3600 };
    const s = await startServer(db, config);
    try {
      const docs = await createEntity(s, {
        name: "docs",
        type: "base",
        fields: [{ name: "doc", type: "file" }],
        rules: { get: PUBLIC, list: PUBLIC, add: PUBLIC },
      });
      await t.step(
        "an upload just started",
        () => survivesSecondStart(s, docs.id, 0, config),
      );
      await t.step(
        "an upload started 20 minutes ago, within a one-hour --bodyDeadline",
        () => survivesSecondStart(s, docs.id, 20 * 60_000, config),
      );
    } finally {
      await s.close();
    }
  },
);
