/**
 * The bare handler of the S3 scenario: a bare `Deno.serve` that answers each
 * request with one object of a bucket, fetched with one GET signed as
 * Moonbase signs it (lib/files/sigv4.ts) and streamed through: the ceiling of
 * the S3 server itself on this machine. Prints `listening <port>` once up.
 *
 * `deno run -A bench/s3_bare.ts <object URL> <region>`, the key in
 * `MB_S3_ACCESS_KEY_ID` / `MB_S3_SECRET_ACCESS_KEY`.
 *
 * @module
 */

import { SigV4Signer } from "../lib/files/sigv4.ts";

const [url, region] = Deno.args;
const signer = new SigV4Signer({
  accessKeyId: Deno.env.get("MB_S3_ACCESS_KEY_ID") ?? "",
  secretAccessKey: Deno.env.get("MB_S3_SECRET_ACCESS_KEY") ?? "",
  service: "s3",
  region,
});
const target = new URL(url);

Deno.serve(
  {
    port: 0,
    hostname: "127.0.0.1",
    onListen: ({ port }) => console.log(`listening ${port}`),
  },
  async () => {
    const res = await fetch(target, {
      headers: signer.sign("GET", target),
    });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return new Response(null, { status: 502 });
    }
    const headers = new Headers({ "content-type": "image/jpeg" });
    const length = res.headers.get("content-length");
    if (length) headers.set("content-length", length);
    return new Response(res.body, { headers });
  },
);
