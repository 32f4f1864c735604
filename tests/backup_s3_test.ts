/**
 * Backups in S3 (`--backups s3://…`), from the outside, on both databases:
 * the files in S3 under one prefix, the backups under another of the same
 * bucket (reached through a proxy that can fail on its own). Create, list,
 * download, upload, delete and restore work on objects (nothing in
 * `<dataDir>/backups`, no download left in the data directory); objects
 * others put under the prefix are listed only when named as backups and
 * never deleted by the schedule's `keep`, which deletes only this
 * database's `mb_auto_*`; S3 refusing or not answering is a 503 with
 * `Retry-After` (never a 500, nothing of S3's answer shown) and health
 * says so. Also: the exact bucket and prefix of `--files` is refused, and
 * the CLI's `backup create|list|restore` honour `--backups`.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  type Reply,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import { multipart } from "./_files_fixtures.ts";
import { setupBlog } from "./_records_fixtures.ts";
import { BackupSchedule } from "../lib/backup/schedule.ts";
import { hasS3, S3_KEY, s3Proxy, startS3 } from "./_s3.ts";
import { childEnv, runCli, show } from "./_cli_fixtures.ts";
import { createApp } from "../mod.ts";

const FILES = "app";
const BACKUPS = "backups";

function assertUnavailable(r: Reply, what: string): void {
  assertEquals(r.status, 503, `${what}: status (${r.text.slice(0, 200)})`);
  assertEquals(r.headers.get("retry-after"), "5", `${what}: Retry-After`);
  assert(
    /Cannot reach the backup store/.test(r.error),
    `${what}: ${r.error}`,
  );
  for (
    const leak of [
      "SignatureDoesNotMatch",
      "LEAKED",
      "StringToSign",
      "RequestId",
      "127.0.0.1",
      "<Error>",
    ]
  ) {
    assert(!r.text.includes(leak), `${what}: the answer tells ${leak}`);
  }
}

async function upload(
  s: TestServer,
  token: string,
  name: string,
  bytes: Uint8Array,
): Promise<Reply> {
  const form = multipart([
    { name: "name", value: name },
    { name: "file", filename: `${name}.tar.gz`, data: bytes },
  ]);
  return await s.request("POST", "/api/v1/sys/backups/upload", {
    token,
    raw: form.body,
    headers: { "content-type": form.type },
  });
}

async function titles(s: TestServer, token: string): Promise<string[]> {
  const r = await s.request(
    "GET",
    "/api/v1/entities/posts?sort=title&limit=100",
    { token },
  );
  assertStatus(r, 200, "posts");
  return (r.data.items as { title: string }[]).map((p) => p.title);
}

async function leftInDataDir(s: TestServer): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(s.dataDir)) {
    if (e.name.includes(".tar.gz") || e.name === "backups") out.push(e.name);
  }
  return out.sort();
}

for (const db of DATABASES) {
  Deno.test({
    name: `backups in S3: every route, foreign objects, keep, S3 down [${db}]`,
    ignore: !hasS3(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const proxy = s3Proxy(s3.endpoint);
      const backupsUrl =
        `s3://${bucket}/${BACKUPS}?endpoint=${proxy.endpoint}&region=us-east-1&path_style=true`;
      const s = await startServer(db, {
        files: s3.filesUrl(bucket, FILES),
        backups: backupsUrl,
        filesCredentials: S3_KEY,
        // The S3 deadline.
        bodyTimeout: 3,
        filesTuning: { probeEveryMs: 100 },
      });
      const keys = async () =>
        (await s3.keys(bucket, `${BACKUPS}/`)).map((k) =>
          k.slice(BACKUPS.length + 1)
        );
      const list = async (token: string) => {
        const r = await s.request("GET", "/api/v1/sys/backups", { token });
        assertStatus(r, 200, "list");
        return r.data as { name: string; size: number; created: string }[];
      };
      try {
        const token = await setupBlog(s);
        for (const title of ["one", "two"]) {
          assertStatus(
            await s.request("POST", "/api/v1/entities/posts", {
              token,
              body: { title },
            }),
            201,
          );
        }
        let archive = new Uint8Array();

        await t.step("create, list and download: an object", async () => {
          const made = await s.request("POST", "/api/v1/sys/backups", {
            token,
            body: { name: "first" },
          });
          assertStatus(made, 201, "create");
          assertEquals(made.data.name, "first.tar.gz");
          assertEquals(await keys(), ["first.tar.gz"]);
          const listed = await list(token);
          assertEquals(listed, [made.data]);
          const r = await fetch(`${s.url}/api/v1/sys/backups/first.tar.gz`, {
            headers: { authorization: `Bearer ${token}` },
          });
          assertEquals(r.status, 200);
          assertEquals(r.headers.get("content-length"), String(made.data.size));
          archive = new Uint8Array(await r.arrayBuffer());
          assertEquals(
            archive,
            await s3.get(bucket, `${BACKUPS}/first.tar.gz`),
            "the object's bytes",
          );
          assertEquals(archive.length, made.data.size);
          assertEquals(await leftInDataDir(s), [], "nothing in the data dir");
          const again = await s.request("POST", "/api/v1/sys/backups", {
            token,
            body: { name: "first" },
          });
          assertStatus(again, 409, "a name taken");
        });

        await t.step("upload: checked as it streams in", async () => {
          assertStatus(await upload(s, token, "copy", archive), 201, "upload");
          assertEquals(
            await s3.get(bucket, `${BACKUPS}/copy.tar.gz`),
            archive,
          );
          const damaged = await upload(
            s,
            token,
            "damaged",
            archive.slice(0, archive.length - 100),
          );
          assertStatus(damaged, 400, "a damaged archive");
          const foreign = await upload(
            s,
            token,
            "foreign",
            new TextEncoder().encode("not an archive at all"),
          );
          assertStatus(foreign, 400, "not an archive");
          assertEquals(await keys(), ["copy.tar.gz", "first.tar.gz"]);
          assertStatus(await upload(s, token, "copy", archive), 409, "taken");
        });

        await t.step("restore from S3: the data as it was", async () => {
          assertStatus(
            await s.request("POST", "/api/v1/entities/posts", {
              token,
              body: { title: "three" },
            }),
            201,
          );
          const r = await s.request(
            "POST",
            "/api/v1/sys/backups/copy/restore",
            { token },
          );
          assertStatus(r, 200, "restore");
          assertEquals(await titles(s, token), ["one", "two"]);
          assertEquals(await leftInDataDir(s), [], "the download is removed");
        });

        await t.step(
          "objects of others: listed only when named as backups",
          async () => {
            for (
              const k of [
                "notes.txt",
                "deep/nested.tar.gz",
                "mb_auto_20200101T000000Z.tar.gz",
              ]
            ) {
              await s3.put(bucket, `${BACKUPS}/${k}`, "someone else's");
            }
            const names = (await list(token)).map((b) => b.name).sort();
            assertEquals(names, [
              "copy.tar.gz",
              "first.tar.gz",
              "mb_auto_20200101T000000Z.tar.gz",
            ]);
          },
        );

        await t.step(
          "keep deletes only this database's mb_auto_* objects",
          async () => {
            const set = await s.request("PATCH", "/api/v1/sys/settings", {
              token,
              body: { backups: { cron: "*/10 * * * *", keep: 1 } },
            });
            assertStatus(set, 200, "settings");
            let now = Date.UTC(2026, 10, 28, 3, 0, 5);
            const errors: string[] = [];
            const schedule = new BackupSchedule({
              storage: s.app.storage,
              backups: s.app.backups,
              settings: () => s.app.settings.read(),
              now: () => now,
              log: { info: () => {}, error: (m) => errors.push(m) },
            });
            for (const minute of [10, 20, 30]) {
              now = Date.UTC(2026, 10, 28, 3, minute, 1);
              assert(await schedule.look() !== undefined, `tick ${minute}`);
            }
            await schedule.stop();
            assertEquals(errors, []);
            assertEquals(await keys(), [
              "copy.tar.gz",
              "deep/nested.tar.gz",
              "first.tar.gz",
              "mb_auto_20200101T000000Z.tar.gz",
              "mb_auto_20261128T033000Z.tar.gz",
              "notes.txt",
            ]);
          },
        );

        await t.step("delete: that object only; then 404", async () => {
          const r = await s.request(
            "DELETE",
            "/api/v1/sys/backups/first.tar.gz",
            { token },
          );
          assertStatus(r, 204, "delete");
          assertEquals(
            await s3.get(bucket, `${BACKUPS}/first.tar.gz`),
            undefined,
          );
          assertStatus(
            await s.request("DELETE", "/api/v1/sys/backups/first.tar.gz", {
              token,
            }),
            404,
            "again",
          );
          assert((await keys()).includes("copy.tar.gz"), "copy stays");
        });

        await t.step(
          "S3 refusing or not answering: 503 with Retry-After, never a 500",
          async () => {
            const before = await keys();
            for (const mode of ["error500", "error403", "stall"] as const) {
              proxy.set(mode);
              const calls: [string, () => Promise<Reply>][] = [
                [
                  "list",
                  () => s.request("GET", "/api/v1/sys/backups", { token }),
                ],
                [
                  "create",
                  () =>
                    s.request("POST", "/api/v1/sys/backups", {
                      token,
                      body: { name: "during" },
                    }),
                ],
                [
                  "download",
                  () =>
                    s.request("GET", "/api/v1/sys/backups/copy.tar.gz", {
                      token,
                    }),
                ],
                ["upload", () => upload(s, token, "during", archive)],
                [
                  "delete",
                  () =>
                    s.request("DELETE", "/api/v1/sys/backups/copy.tar.gz", {
                      token,
                    }),
                ],
                [
                  "restore",
                  () =>
                    s.request("POST", "/api/v1/sys/backups/copy/restore", {
                      token,
                    }),
                ],
              ];
              // At once: in a stall, each waits out the deadline on its own.
              const replies = await Promise.all(
                calls.map(([, call]) => call()),
              );
              calls.forEach(([what], i) =>
                assertUnavailable(replies[i], `${mode}: ${what}`)
              );
              const h = await s.request("GET", "/api/v1/health");
              assertStatus(h, 200, "health");
              assertEquals(
                [h.data.status, h.data.backups, h.data.backups_kind],
                ["degraded", "unavailable", "s3"],
                `${mode}: health`,
              );
              assertEquals(h.data.files, "ok", "files are elsewhere");
              proxy.set("pass");
              assertEquals(await keys(), before, `${mode}: nothing left`);
              assertEquals(await titles(s, token), ["one", "two"]);
              assertEquals(await leftInDataDir(s), [], `${mode}: no download`);
            }
            await list(token);
            const h = await s.request("GET", "/api/v1/health");
            assertEquals([h.data.status, h.data.backups], ["ok", "ok"]);
          },
        );
      } finally {
        proxy.close();
        await s.close();
      }
    },
  });
}

Deno.test({
  name: "--backups: the same bucket and prefix as --files is refused",
  ignore: !hasS3(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s3 = await startS3();
    const bucket = await s3.createBucket();
    const dataDir = await Deno.makeTempDir({ prefix: "mb_bk_same_" });
    try {
      let error = "";
      await createApp({
        dataDir,
        quiet: true,
        jwtSecret: TEST_JWT_SECRET,
        files: s3.filesUrl(bucket, "shared"),
        backups: s3.filesUrl(bucket, "shared/"),
        filesCredentials: S3_KEY,
      }).then((app) => app.close(), (err) => error = String(err));
      assert(
        /same bucket and prefix as --files/.test(error),
        `refused: ${error}`,
      );
      const cli = await runCli([
        "--dataDir",
        dataDir,
        "--files",
        s3.filesUrl(bucket, "shared"),
        "--backups",
        s3.filesUrl(bucket, "shared"),
        "backup",
        "list",
      ], { env: childEnv(TEST_JWT_SECRET) });
      assertEquals(cli.code, 2, show(cli));
      assert(/same bucket and prefix as --files/.test(cli.stderr), show(cli));
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "backup create, list and restore with --backups s3://… [sqlite]",
  ignore: !hasS3() || !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s3 = await startS3();
    const bucket = await s3.createBucket();
    const url = s3.filesUrl(bucket, "nightly");
    const env = {
      ...childEnv(TEST_JWT_SECRET),
      MB_S3_ACCESS_KEY_ID: S3_KEY.accessKeyId,
      MB_S3_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey,
    };
    const from = await Deno.makeTempDir({ prefix: "mb_bk_s3_from_" });
    const into = await Deno.makeTempDir({ prefix: "mb_bk_s3_into_" });
    try {
      const a = await startServer("sqlite", { dataDir: from });
      const token = await setupBlog(a);
      assertStatus(
        await a.request("POST", "/api/v1/entities/posts", {
          token,
          body: { title: "carried" },
        }),
        201,
      );
      await a.close();
      const made = await runCli(
        ["--dataDir", from, "--backups", url, "backup", "create", "cli"],
        { env },
      );
      assertEquals(made.code, 0, show(made));
      assertEquals(
        made.stdout.trim(),
        `s3://${bucket}/nightly/cli.tar.gz`,
        show(made),
      );
      assertEquals(await s3.keys(bucket), ["nightly/cli.tar.gz"]);
      // MB_BACKUPS as well as the option.
      const listed = await runCli(["--dataDir", from, "backup", "list"], {
        env: { ...env, MB_BACKUPS: url },
      });
      assert(listed.stdout.startsWith("cli.tar.gz\t"), show(listed));
      const restored = await runCli(
        ["--dataDir", into, "--backups", url, "backup", "restore", "cli"],
        { env },
      );
      assertEquals(restored.code, 0, show(restored));
      const b = await startServer("sqlite", { dataDir: into });
      try {
        assertEquals(await titles(b, await b.adminToken()), ["carried"]);
      } finally {
        await b.close();
      }
      for await (const e of Deno.readDir(into)) {
        assert(!e.name.includes(".tar.gz"), `left in the data dir: ${e.name}`);
      }
    } finally {
      await Deno.remove(from, { recursive: true }).catch(() => {});
      await Deno.remove(into, { recursive: true }).catch(() => {});
    }
  },
});
