/**
 * The file backend contract (tests/_file_backend_contract.ts) on every
 * backend: the data directory on disk, and an S3 bucket (Ceph's gateway,
 * tests/_s3.ts) under a prefix, with a small part size so that multipart
 * uploads run.
 *
 * @module
 */

import { join } from "node:path";
import { DiskBackend } from "../lib/files/disk_backend.ts";
import { S3Backend } from "../lib/files/s3_backend.ts";
import { runFileBackendContract } from "./_file_backend_contract.ts";
import { hasS3, S3_KEY, startS3 } from "./_s3.ts";

async function walk(dir: string, base = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const rel = base ? `${base}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...await walk(join(dir, e.name), rel));
    else out.push(rel);
  }
  return out.sort();
}

runFileBackendContract("disk", async () => {
  const top = await Deno.makeTempDir({ prefix: "mb_backend_" });
  const dataDir = join(top, "data");
  await Deno.mkdir(dataDir);
  const backend = new DiskBackend(dataDir);
  return {
    backend,
    partSize: 0,
    async places() {
      const all = await walk(top);
      const root = "data/files/";
      return {
        inside: all.filter((p) => p.startsWith(root)).map((p) =>
          p.slice(root.length)
        ),
        outside: all.filter((p) => !p.startsWith(root)),
      };
    },
    async close() {
      await backend.close();
      await Deno.remove(top, { recursive: true });
    },
  };
});

const PART = 5 * 1024 * 1024; // S3's smallest part

runFileBackendContract("s3", async () => {
  const s3 = await startS3();
  const bucket = await s3.createBucket();
  const prefix = "store/p1";
  const backend = new S3Backend(
    {
      bucket,
      prefix,
      endpoint: s3.endpoint,
      region: "us-east-1",
      pathStyle: true,
    },
    S3_KEY,
    { timeoutMs: 30_000, partSize: PART },
  );
  return {
    backend,
    partSize: PART,
    async places() {
      const all = await s3.keys(bucket);
      const root = `${prefix}/`;
      return {
        inside: all.filter((k) => k.startsWith(root)).map((k) =>
          k.slice(root.length)
        ),
        outside: all.filter((k) => !k.startsWith(root)),
      };
    },
    close: () => backend.close(),
  };
}, { ignore: !hasS3() });
