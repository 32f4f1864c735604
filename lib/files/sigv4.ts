/**
 * AWS Signature Version 4 for the requests of the S3 client
 * (lib/files/s3_client.ts), synchronous on `node:crypto` (`createHash`,
 * `createHmac`): a signature costs ~10 µs where WebCrypto's asynchronous
 * digest, key import and sign cost ~120 µs (docs/internals/performance.md).
 *
 * It signs exactly as `npm:aws4fetch` 1.0.20 did for Moonbase (its test,
 * sigv4_test.ts, holds the two to the same headers): the signed headers are
 * `host` and every header given but `authorization`, `content-type`,
 * `content-length`, `user-agent`, `range`, `expect`, `connection`,
 * `presigned-expires` and `x-amzn-trace-id`; the payload is
 * `UNSIGNED-PAYLOAD` unless `x-amz-content-sha256` is given; the path is
 * decoded and encoded again as S3 wants it (RFC 3986, `/` kept); the query is
 * decoded, encoded again and sorted, a repeated key kept once. The signing
 * key, derived from the secret, the date, the region and the service, is
 * kept for the day.
 *
 * @module
 */

import { createHash, createHmac } from "node:crypto";

/** Who signs, and for which region and service. */
export interface SigV4Key {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
  /** `s3` for every request Moonbase sends. */
  service: string;
}

/** Headers never signed (a proxy or the fetch itself may change them). */
const UNSIGNED = new Set([
  "authorization",
  "content-type",
  "content-length",
  "user-agent",
  "presigned-expires",
  "expect",
  "x-amzn-trace-id",
  "range",
  "connection",
  // Set by Moonbase to "identity"; a proxy may rewrite it.
  "accept-encoding",
]);

/**
 * Signs requests with one key (SigV4, the `Authorization` header).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SigV4Signer } from "moonbase/lib/files/sigv4.ts";
 * // The example of AWS's S3 documentation ("GET Object"), but with the
 * // payload unsigned as Moonbase sends it.
 * const signer = new SigV4Signer({
 *   accessKeyId: "AKIAIOSFODNN7EXAMPLE",
 *   secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
 *   region: "us-east-1",
 *   service: "s3",
 * });
 * const headers = signer.sign(
 *   "GET",
 *   new URL("https://examplebucket.s3.amazonaws.com/test.txt"),
 *   new Headers({ range: "bytes=0-9" }),
 *   new Date("2013-05-24T00:00:00Z"),
 * );
 * assert.equal(headers.get("x-amz-date"), "20130524T000000Z");
 * assert.equal(headers.get("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
 * assert.equal(headers.get("range"), "bytes=0-9");
 * assert.match(
 *   headers.get("authorization")!,
 *   /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/20130524\/us-east-1\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
 * );
 * ```
 */
export class SigV4Signer {
  readonly #key: SigV4Key;
  /** The signing key of `#day` (`YYYYMMDD`). */
  #signingKey: Buffer | undefined;
  #day = "";

  constructor(key: SigV4Key) {
    this.#key = key;
  }

  /**
   * The headers to send `method url` with: `headers` (changed in place and
   * returned) plus `x-amz-date`, `x-amz-content-sha256` (unless given),
   * `x-amz-security-token` (with a session token) and `authorization`.
   */
  sign(
    method: string,
    url: URL,
    headers: Headers = new Headers(),
    now: Date = new Date(),
  ): Headers {
    const key = this.#key;
    const datetime = now.toISOString().replace(/[:-]|\.\d{3}/g, "");
    const day = datetime.slice(0, 8);
    headers.delete("host");
    if (!headers.has("x-amz-content-sha256")) {
      headers.set("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    }
    headers.set("x-amz-date", datetime);
    if (key.sessionToken) {
      headers.set("x-amz-security-token", key.sessionToken);
    }
    const names = ["host", ...headers.keys()].filter((h) => !UNSIGNED.has(h))
      .sort();
    const signedHeaders = names.join(";");
    const canonicalHeaders = names.map((h) =>
      `${h}:${
        h === "host" ? url.host : (headers.get(h) ?? "").replace(/\s+/g, " ")
      }`
    ).join("\n");
    const scope = `${day}/${key.region}/${key.service}/aws4_request`;
    const canonical = [
      method.toUpperCase(),
      canonicalPath(url.pathname),
      canonicalQuery(url.searchParams),
      `${canonicalHeaders}\n`,
      signedHeaders,
      headers.get("x-amz-content-sha256"),
    ].join("\n");
    const toSign = [
      "AWS4-HMAC-SHA256",
      datetime,
      scope,
      createHash("sha256").update(canonical).digest("hex"),
    ].join("\n");
    const signature = createHmac("sha256", this.#signingKeyOf(day))
      .update(toSign).digest("hex");
    headers.set(
      "authorization",
      `AWS4-HMAC-SHA256 Credential=${key.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    );
    return headers;
  }

  /** The key derived for `day` (kept until the day changes). */
  #signingKeyOf(day: string): Buffer {
    if (this.#signingKey && this.#day === day) return this.#signingKey;
    const { secretAccessKey, region, service } = this.#key;
    const hmac = (k: string | Buffer, data: string) =>
      createHmac("sha256", k).update(data).digest();
    const key = hmac(
      hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service),
      "aws4_request",
    );
    this.#signingKey = key;
    this.#day = day;
    return key;
  }
}

/** S3's canonical URI: the path decoded (`+` as a space), then encoded again. */
function canonicalPath(pathname: string): string {
  let path: string;
  try {
    path = decodeURIComponent(pathname.replace(/\+/g, " "));
  } catch {
    path = pathname; // not valid percent-encoding: signed as it is
  }
  return rfc3986(encodeURIComponent(path).replace(/%2F/g, "/"));
}

/** The canonical query: each pair encoded, sorted; a repeated key kept once (S3). */
function canonicalQuery(params: URLSearchParams): string {
  const seen = new Set<string>();
  const pairs: [string, string][] = [];
  for (const [k, v] of params) {
    if (!k || seen.has(k)) continue;
    seen.add(k);
    pairs.push([
      rfc3986(encodeURIComponent(k)),
      rfc3986(encodeURIComponent(v)),
    ]);
  }
  pairs.sort(([k1, v1], [k2, v2]) =>
    k1 < k2 ? -1 : k1 > k2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0
  );
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

/** Encodes what `encodeURIComponent` leaves but RFC 3986 reserves. */
function rfc3986(s: string): string {
  return s.replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
