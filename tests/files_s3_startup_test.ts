/**
 * Starting on an S3 file store that cannot be used: one line saying what is
 * wrong and what to do (a bucket that does not exist, a refused key, an
 * endpoint that does not answer, no key at all, a `--files` value that is
 * not one), and the app does not start. The database is not what is
 * tested: SQLite only.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createApp } from "../mod.ts";
import { parseCli } from "../main.ts";
import { hasS3, S3_KEY, startS3 } from "./_s3.ts";

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function startError(
  files: string,
  credentials?: { accessKeyId: string; secretAccessKey: string },
): Promise<string> {
  const dataDir = await Deno.makeTempDir({ prefix: "mb_s3start_" });
  try {
    await createApp({
      dataDir,
      quiet: true,
      files,
      filesCredentials: credentials,
      bodyTimeout: 3,
    }).then(async (app) => {
      await app.close();
      assert.fail("the app started");
    });
  } catch (err) {
    const message = (err as Error).message;
    assert.ok(!message.includes("\n"), `one line: ${message}`);
    return message;
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
  throw new Error("unreachable");
}

Deno.test({
  name: "files in S3: start-up errors say what to do, in one line",
  ignore: !hasS3(),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const s3 = await startS3();
    const bucket = await s3.createBucket();
    const cases: [string, string, typeof S3_KEY | undefined, RegExp][] = [
      [
        "a bucket that does not exist",
        s3.filesUrl("mb-no-such-bucket"),
        S3_KEY,
        /^Cannot use --files s3:\/\/mb-no-such-bucket: bucket mb-no-such-bucket does not exist at http:\/\/127\.0\.0\.1:\d+; create it, or name another bucket in --files$/,
      ],
      [
        "a wrong secret",
        s3.filesUrl(bucket),
        { ...S3_KEY, secretAccessKey: "wrong-secret-key-0123456789" },
        /the S3 server refused the credentials \(SignatureDoesNotMatch\); set MB_S3_ACCESS_KEY_ID and MB_S3_SECRET_ACCESS_KEY/,
      ],
      [
        "an unknown key",
        s3.filesUrl(bucket),
        { ...S3_KEY, accessKeyId: "NOSUCHKEY" },
        /refused the credentials \(InvalidAccessKeyId\)/,
      ],
      [
        "an endpoint that does not answer",
        `s3://${bucket}?endpoint=http://127.0.0.1:${freePort()}&path_style=true`,
        S3_KEY,
        /: cannot reach http:\/\/127\.0\.0\.1:\d+ \(.+\); check endpoint= in the --files URL and that the S3 server runs$/,
      ],
    ];
    for (const [name, files, key, expected] of cases) {
      await t.step(name, async () => {
        const message = await startError(files, key);
        assert.match(message, expected);
        assert.ok(!message.includes(S3_KEY.secretAccessKey), "no secret told");
      });
    }

    await t.step("no key at all", async () => {
      const saved = [
        "MB_S3_ACCESS_KEY_ID",
        "MB_S3_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
      ]
        .map((k) => [k, Deno.env.get(k)] as const);
      for (const [k] of saved) Deno.env.delete(k);
      try {
        assert.match(
          await startError(s3.filesUrl(bucket)),
          /^Cannot use an S3 file store: no key; set MB_S3_ACCESS_KEY_ID and MB_S3_SECRET_ACCESS_KEY/,
        );
      } finally {
        for (const [k, v] of saved) if (v !== undefined) Deno.env.set(k, v);
      }
    });

    await t.step("--files values that are not one", () => {
      for (
        const [value, why] of [
          ["ftp://x", /unknown kind of store/],
          ["s3://A_B", /bucket name/],
          ["s3://bkt/../etc", /each part of the prefix/],
          ["s3://bkt/.hidden", /each part of the prefix/],
          [
            "s3://bkt?endpoint=file:///etc",
            /endpoint must be an http\(s\) URL/,
          ],
          ["s3://bkt?path_style=maybe", /path_style must be true or false/],
          ["s3://bkt?acl=public", /unknown parameter acl/],
        ] as const
      ) {
        assert.throws(
          () => parseCli(["--files", value, "serve"]),
          (err: Error) =>
            /^invalid --files/.test(err.message) && why.test(err.message),
          value,
        );
      }
      assert.equal(
        parseCli(["--files", "local", "serve"]).config.files,
        "local",
      );
    });
  },
});
