/**
 * The S3 scenario's servers: Ceph's RADOS Gateway on loopback (the tests'
 * own, tests/_s3.ts), a second Moonbase on the same database started
 * `--files s3://…` with the scenarios' photo uploaded through it (the same
 * bytes, so the same size as the disk server's), and the bare handler
 * (bench/s3_bare.ts) fetching that object from the same gateway. Started
 * only when an S3 row runs; `close` stops them all, the gateway included.
 *
 * The two Moonbases share the bench's scratch database: each serves only
 * the photo it stored (the other's record names a file its store lacks).
 *
 * @module
 */

import { S3_KEY, startS3, stopS3 } from "../tests/_s3.ts";
import type { Target } from "./load.ts";
import { type Proc, start, stop } from "./procs.ts";
import { PHOTOS } from "./seed.ts";

/** The S3 servers of one database's run. */
export interface S3Files {
  /** The Moonbase serving from S3. */
  moonbase: Proc;
  /** Its `deno` arguments and environment (for a profile). */
  serverArgs: string[];
  env: Record<string, string>;
  /** The photo on it. */
  target: Target;
  /** The bare handler (started only when `bare`). */
  bare?: Proc;
  /** Stops the servers and the gateway. */
  close(): Promise<void>;
}

/** The key, as the servers get it. */
export const S3_ENV = {
  MB_S3_ACCESS_KEY_ID: S3_KEY.accessKeyId,
  MB_S3_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey,
};

/** The region the tests' gateway signs for (tests/_s3.ts). */
const REGION = "us-east-1";
/** The key prefix of the bench's files in its bucket. */
const PREFIX = "bench";

/**
 * Starts the gateway, a Moonbase on it (`serverArgs` with `--files`: pass
 * them through `withOptions`), uploads the photo served at `diskUrl` +
 * `diskPath` through it, and with `bare` the bare handler.
 */
export async function startS3Files(opts: {
  /** The scenarios' server args with `--files <url>` added. */
  serverArgs: (filesUrl: string) => string[];
  diskUrl: string;
  diskPath: string;
  bare: boolean;
}): Promise<S3Files> {
  const peer = await startS3();
  const started: Proc[] = [];
  const close = async () => {
    for (const p of started) await stop(p);
    await stopS3();
  };
  try {
    const bucket = await peer.createBucket();
    const serverArgs = opts.serverArgs(peer.filesUrl(bucket, PREFIX));
    const moonbase = await start(serverArgs, S3_ENV);
    started.push(moonbase);
    const photo = await fetch(`${opts.diskUrl}${opts.diskPath}`);
    if (photo.status !== 200) {
      throw new Error(`Cannot read the photo from disk: ${photo.status}`);
    }
    const bytes = new Uint8Array(await photo.arrayBuffer());
    const form = new FormData();
    form.set("img", new File([bytes], "photo.jpg"));
    const res = await fetch(
      `http://127.0.0.1:${moonbase.port}/api/v1/entities/${PHOTOS}`,
      { method: "POST", body: form },
    );
    const body = await res.json();
    if (res.status !== 201) {
      throw new Error(`Cannot upload the photo to S3: ${JSON.stringify(body)}`);
    }
    const name = String(body.data.img);
    const target = { method: "GET", path: `/api/files/${PHOTOS}/${name}` };
    let bare: Proc | undefined;
    if (opts.bare) {
      const key = (await peer.keys(bucket, PREFIX)).find((k) =>
        k.endsWith(`/${name}`)
      );
      if (!key) throw new Error(`Cannot find ${name} in bucket ${bucket}`);
      bare = await start(
        [
          "run",
          "-A",
          "bench/s3_bare.ts",
          `${peer.endpoint}/${bucket}/${key}`,
          REGION,
        ],
        S3_ENV,
      );
      started.push(bare);
    }
    return { moonbase, serverArgs, env: S3_ENV, target, bare, close };
  } catch (err) {
    await close();
    throw err;
  }
}
