/**
 * Moonbase's SigV4 signer (sigv4.ts) against `npm:aws4fetch`, which signed
 * the S3 client's requests before and stays as the oracle: the same requests
 * at a fixed date get the same `authorization` and `x-amz-*` headers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AwsV4Signer } from "aws4fetch";
import { SigV4Signer } from "./sigv4.ts";

const KEY = {
  accessKeyId: "AKIAIOSFODNN7EXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
};

/** The URL of a key as the S3 client builds it (each segment encoded). */
function objectUrl(base: string, key: string, query = ""): string {
  const path = key.split("/").map(encodeURIComponent).join("/");
  return `${base}/${path}${query ? `?${query}` : ""}`;
}

interface Case {
  name: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  sessionToken?: string;
  region?: string;
}

const PATH = "http://127.0.0.1:7480/bucket";
const HOST = "https://bucket.s3.eu-west-3.amazonaws.com";

const cases: Case[] = [
  { name: "GET, path style", method: "GET", url: objectUrl(PATH, "a/b.png") },
  {
    name: "GET with a range",
    method: "GET",
    url: objectUrl(PATH, "p/e1/photo_Ab3dE5gH9k.jpg"),
    headers: { range: "bytes=0-99" },
  },
  {
    name: "HEAD, virtual-host style",
    method: "HEAD",
    url: objectUrl(HOST, "files/e1/x_0123456789.txt"),
    region: "eu-west-3",
  },
  {
    name: "PUT, unsigned payload, content type and metadata",
    method: "PUT",
    url: objectUrl(PATH, "files/e1/x_0123456789.bin"),
    headers: {
      "content-type": "application/octet-stream",
      "x-amz-meta-mtime": "1614834367890",
    },
  },
  {
    name: "PUT with the body's hash",
    method: "PUT",
    url: objectUrl(PATH, "k.txt"),
    headers: {
      "x-amz-content-sha256":
        "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b",
    },
  },
  {
    name: "keys with spaces, unicode, + and ~",
    method: "GET",
    url: objectUrl(PATH, "dir with space/ünï cödé ✓/a+b~c!'()*.txt"),
  },
  {
    name: "a key with percent signs and reserved characters",
    method: "DELETE",
    url: objectUrl(PATH, "100%/a&b=c;d,e@f$g#h?i"),
  },
  {
    name: "multipart: uploads=",
    method: "POST",
    url: objectUrl(PATH, "big.bin", "uploads="),
    headers: { "content-type": "application/octet-stream" },
  },
  {
    name: "multipart: a part, an upload id needing encoding",
    method: "PUT",
    url: objectUrl(
      PATH,
      "big.bin",
      `partNumber=2&uploadId=${encodeURIComponent("2~Ab+c/d=e f")}`,
    ),
  },
  {
    name: "a listing: the query sorted, characters needing encoding",
    method: "GET",
    url: `${PATH}/?${new URLSearchParams({
      "list-type": "2",
      prefix: "pre fix/ü+~*/",
      delimiter: "/",
      "continuation-token": "1/abc+def==",
    })}`,
  },
  {
    name: "a query out of order, a repeated key",
    method: "GET",
    url: `${PATH}/k?b=2&a=1&a=0&c`,
  },
  {
    name: "a session token",
    method: "GET",
    url: objectUrl(PATH, "k"),
    sessionToken: "FQoGZXIvYXdzE+token/with=chars",
  },
  {
    name: "header values with runs of spaces",
    method: "PUT",
    url: objectUrl(PATH, "k"),
    headers: { "x-amz-meta-note": "a   b\tc" },
  },
  {
    name: "a default port, virtual-host style",
    method: "GET",
    url: objectUrl("http://bucket.minio.local:80", "k"),
  },
];

Deno.test("SigV4: the same headers as aws4fetch", async (t) => {
  const at = new Date("2026-11-29T13:14:15.678Z");
  for (const c of cases) {
    await t.step(c.name, async () => {
      const region = c.region ?? "us-east-1";
      const oracle = await new AwsV4Signer({
        ...KEY,
        sessionToken: c.sessionToken,
        service: "s3",
        region,
        method: c.method,
        url: c.url,
        headers: c.headers,
        datetime: at.toISOString().replace(/[:-]|\.\d{3}/g, ""),
      }).sign();
      const ours = new SigV4Signer({
        ...KEY,
        sessionToken: c.sessionToken,
        service: "s3",
        region,
      }).sign(c.method, new URL(c.url), new Headers(c.headers), at);
      assert.deepEqual([...ours], [...oracle.headers]);
      assert.ok(ours.get("authorization"));
    });
  }
});

Deno.test("SigV4: the signing key is kept for the day, derived again the next", async () => {
  const signer = new SigV4Signer({
    ...KEY,
    service: "s3",
    region: "us-east-1",
  });
  const url = objectUrl(PATH, "k");
  for (
    const when of [
      "2026-11-29T00:00:00Z",
      "2026-11-29T23:59:59Z",
      "2026-11-30T00:00:01Z",
    ]
  ) {
    const at = new Date(when);
    const oracle = await new AwsV4Signer({
      ...KEY,
      service: "s3",
      region: "us-east-1",
      method: "GET",
      url,
      datetime: at.toISOString().replace(/[:-]|\.\d{3}/g, ""),
    }).sign();
    assert.equal(
      signer.sign("GET", new URL(url), new Headers(), at).get("authorization"),
      oracle.headers.get("authorization"),
      when,
    );
  }
});
