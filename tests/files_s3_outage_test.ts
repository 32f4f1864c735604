/**
 * Files in S3 when S3 fails, from the outside, on both databases: the S3
 * server down mid-test, stalling (accepts, never answers) and answering S3
 * errors. Moonbase reaches the real S3 server (the process's shared
 * gateway, tests/_s3.ts) through a proxy of the test's own, and the proxy
 * makes the failures: refusing every connection (nothing listens on the
 * port Moonbase was given, as when the S3 server is stopped; connections
 * open then are cut), holding requests unanswered, or answering errors
 * itself; the S3 server behind it stays real and up, so no other test is
 * touched. Every file request then gets a 503 with
 * `Retry-After` within the S3 deadline (`bodyTimeout`), never a 500 and
 * never a hang; no record is written without its file; nothing of what S3
 * said reaches the client; health says `files: "unavailable"` (and `ok`
 * again once S3 is back); and the objects a failure left (an upload whose
 * outcome S3 never told, a file of a deleted record) are swept once S3 is
 * back.
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
  type TestServer,
} from "./_server.ts";
import {
  count,
  createEntities,
  createWith,
  getFile,
  PNG,
  sendForm,
  TXT,
} from "./_files_fixtures.ts";
import { hasS3, S3_KEY, s3Proxy, startS3 } from "./_s3.ts";
import { poll, within } from "./_wait.ts";

const PREFIX = "app";

function assertUnavailable(
  r: { status: number; headers: Headers; text: string },
  what: string,
) {
  assertEquals(r.status, 503, `${what}: status (${r.text.slice(0, 200)})`);
  assertEquals(r.headers.get("retry-after"), "5", `${what}: Retry-After`);
  for (
    const leak of [
      "SignatureDoesNotMatch",
      "LEAKED",
      "StringToSign",
      "RequestId",
      "127.0.0.1",
      "ECONNREFUSED",
      "refused",
      "<Error>",
    ]
  ) {
    assert(
      !r.text.includes(leak),
      `${what}: the answer tells ${leak}: ${r.text}`,
    );
  }
}

async function upload(s: TestServer, name = "up.txt"): Promise<Reply> {
  return await sendForm(s, "POST", "/api/v1/entities/pub", [
    { name: "cover", filename: name, data: TXT },
  ], { token: await s.adminToken() });
}

async function ledger(s: TestServer): Promise<string[]> {
  const id = s.app.schemas.get("pub")!.id;
  const rows = await s.app.storage.query(
    `SELECT "name" FROM "mb_files" WHERE "entity_id" = ?`,
    [id],
  );
  return rows.map((r) => String(r.name)).sort();
}

for (const db of DATABASES) {
  Deno.test({
    name: `files in S3: outages, stalls and S3 errors → 503 [${db}]`,
    ignore: !hasS3(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const proxy = s3Proxy(s3.endpoint);
      const s = await startServer(db, {
        files:
          `s3://${bucket}/${PREFIX}?endpoint=${proxy.endpoint}&region=us-east-1&path_style=true`,
        filesCredentials: S3_KEY,
        // The S3 deadline (and a body's longest pause).
        bodyTimeout: 2,
        filesTuning: { probeEveryMs: 100, sweepEveryMs: 100, strayAgeMs: 500 },
      });
      const keys = async () => {
        const id = s.app.schemas.get("pub")!.id;
        const root = `${PREFIX}/${id}/`;
        return (await s3.keys(bucket, root)).map((k) => k.slice(root.length));
      };
      const health = async () => (await s.request("GET", "/api/v1/health"));
      try {
        await createEntities(s, "pub");
        const kept = await createWith(s, "pub", [
          { name: "cover", filename: "kept.png", data: PNG },
        ]);
        const doomed = await createWith(s, "pub", [
          { name: "cover", filename: "doomed.txt", data: TXT },
        ]);
        const keptPath = `/api/files/pub/${kept.cover}`;

        await t.step(
          "S3 stopped: uploads and downloads answer 503",
          async () => {
            proxy.set("down");
            const records = await count(s, "pub");
            const r = await upload(s);
            assertUnavailable(r, "upload");
            assertEquals(
              r.error,
              "Cannot reach the file store: try again shortly",
            );
            assertEquals(
              await count(s, "pub"),
              records,
              "no record without its file",
            );
            assertUnavailable(await getFile(s, keptPath), "download");
            assertUnavailable(
              await getFile(s, keptPath, { method: "HEAD" }),
              "HEAD",
            );
            // A record without files is served as ever.
            assertStatus(
              await s.request("GET", `/api/v1/entities/pub/${kept.id}`, {
                token: await s.adminToken(),
              }),
              200,
            );
          },
        );

        await t.step(
          "health: files unavailable, the database ok (200, degraded)",
          async () => {
            const h = await poll("files unavailable", async () => {
              const r = await health();
              return r.data?.files === "unavailable" ? r : undefined;
            });
            assertEquals([h.status, h.data.status, h.data.database], [
              200,
              "degraded",
              "ok",
            ]);
          },
        );

        await t.step(
          "a delete while S3 is down: the record goes, its object waits",
          async () => {
            assertStatus(
              await s.request("DELETE", `/api/v1/entities/pub/${doomed.id}`, {
                token: await s.adminToken(),
              }),
              204,
            );
            assert(
              (await ledger(s)).includes(doomed.cover as string),
              "still recorded",
            );
          },
        );

        await t.step(
          "S3 back: health ok, files served, what was left is swept",
          async () => {
            proxy.set("pass");
            await poll(
              "files ok",
              async () => (await health()).data?.files === "ok",
            );
            const g = await getFile(s, keptPath);
            assertEquals(g.status, 200);
            await poll(
              "the doomed object and the failed upload's row swept",
              async () => {
                const k = await keys(), l = await ledger(s);
                return !k.includes(doomed.cover as string) && l.length === 1 &&
                  l[0] === kept.cover;
              },
            );
            assertEquals(await keys(), [kept.cover]);
          },
        );

        await t.step(
          "a stalling S3: 503 within the deadline, not a hang",
          async () => {
            proxy.set("stall");
            const records = await count(s, "pub");
            const token = await s.adminToken();
            // At once: each waits out the deadline on its own connection.
            const [small, download, big] = await Promise.all([
              within("an upload", 30_000, upload(s)),
              within("a download", 30_000, getFile(s, keptPath)),
              within(
                "a multipart upload",
                30_000,
                sendForm(s, "POST", "/api/v1/entities/pub", [
                  {
                    name: "cover",
                    filename: "big.bin",
                    data: new Uint8Array(9 * 1024 * 1024),
                  },
                ], { token }),
              ),
            ]);
            assertUnavailable(small, "upload");
            assertUnavailable(download, "download");
            assertUnavailable(big, "multipart upload");
            assertEquals(await count(s, "pub"), records);
            proxy.set("pass");
            await poll("nothing half-written is left", async () => {
              const k = await keys(), l = await ledger(s);
              return k.length === 1 && k[0] === kept.cover && l.length === 1;
            });
          },
        );

        for (const mode of ["error403", "error500"] as const) {
          await t.step(
            `S3 answers ${mode.slice(5)}: a 503 that tells nothing of it`,
            async () => {
              proxy.set(mode);
              assertUnavailable(await upload(s), "upload");
              assertUnavailable(await getFile(s, keptPath), "download");
              proxy.set("pass");
            },
          );
        }

        await t.step("all well again", async () => {
          const r = await upload(s, "after.txt");
          assertStatus(r, 201);
          assertEquals(
            (await getFile(s, `/api/files/pub/${r.data.cover}`)).text,
            TXT,
          );
        });
      } finally {
        await s.close();
        proxy.close();
      }
    },
  });
}
