/**
 * Objects under a prefix of an S3-compatible bucket, for the stores that
 * keep their bytes there: stored files (`--files s3://…`,
 * lib/files/s3_backend.ts) and backups (`--backups s3://…`,
 * lib/backup/s3_place.ts). Requests are signed (SigV4) by
 * lib/files/sigv4.ts; nothing of an S3 SDK is needed.
 *
 * - Uploads stream: an object up to `partSize` (8 MiB) is held until it ends
 *   and sent with one PUT; a larger one goes as a multipart upload, a part
 *   at a time (never more than one part in memory), aborted when anything
 *   fails.
 * - Every request has a deadline (`timeoutMs`): no answer by then, a
 *   connection refused, a 5xx or a refusal (403, a missing bucket) throws
 *   the store's `unavailable` error (a 503 with `Retry-After` for the
 *   client) and writes one log line for the operator with the status and
 *   S3's error code (never its body, which may echo the request).
 * - A download's body that stalls for `timeoutMs` errors (its connection
 *   closes) rather than hang.
 * - `state()` is what the last request saw; when that is older than
 *   `probeEveryMs`, it starts one probe in the background (health never
 *   costs a request of its own).
 *
 * Over 350 lines, one idea: one S3 client; kept whole because every request
 * (write, put, head, read, remove, list, the probe) shares its signing,
 * deadline, error mapping and last state.
 *
 * @module
 */

import type { MoonbaseError } from "../errors.ts";
import {
  type ByteRange,
  type FilesState,
  filesUnavailable,
} from "./backend.ts";
import { type RangeAsked, rangeHeader, resolveRange } from "./byte_range.ts";
import { SigV4Signer } from "./sigv4.ts";

/** Where the bucket is (`lib/files/files_url.ts` parses it from an `s3://` URL). */
export interface S3Location {
  bucket: string;
  /** Key prefix without slashes at either end ("" for none). */
  prefix: string;
  /** `http(s)://host[:port][/path]`, without a trailing slash. */
  endpoint: string;
  region: string;
  /** `endpoint/bucket/key` (true) or `bucket.endpoint/key`. */
  pathStyle: boolean;
}

/** The key the requests are signed with. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Tuning and the operator's log. */
export interface S3Options {
  /** Longest wait for an answer (and longest stall of a download). */
  timeoutMs: number;
  /** Objects above this go as multipart uploads of parts this size (at least 5 MiB on AWS). */
  partSize?: number;
  /** How stale `state()` may be before a probe (default 10 s). */
  probeEveryMs?: number;
  /** Where failures are told (one line each; the app's logger). */
  warn?: (message: string, data: Record<string, unknown>) => void;
}

/** What a store on S3 is, for its errors and its log lines. */
export interface S3Purpose {
  /** The option that names it, for the operator: `--files`, `--backups`. */
  option: string;
  /** Its log line when a request fails: `Cannot use the file store`. */
  failure: string;
  /** The client's error when the store cannot be reached (a 503 with `Retry-After`). */
  unavailable: () => MoonbaseError;
}

/** The file store's purpose (the default). */
export const FILES_PURPOSE: S3Purpose = {
  option: "--files",
  failure: "Cannot use the file store",
  unavailable: filesUnavailable,
};

/** Parts of a multipart upload: 8 MiB. */
export const PART_SIZE = 8 * 1024 * 1024;

/** A key under the prefix no stored object ever has. */
const PROBE_KEY = ".moonbase-probe";

/** An answer read whole. */
export interface S3Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** An object as a listing shows it. */
export interface S3Object {
  /** Its key relative to the prefix (no leading slash). */
  place: string;
  size: number;
  /** When it was written (S3's `LastModified`). */
  modified: Date;
}

/** An object's head. */
export interface S3Head {
  size: number;
  /** S3's `Last-Modified`. */
  modified: Date;
  headers: Headers;
}

/** An object opened with one GET (`S3Client.open`). */
export interface S3Opened extends S3Head {
  /** The bytes `body` holds; undefined: all of them. */
  range?: ByteRange;
  /** Its bytes; undefined when the range asked comes to none of them. */
  body?: ReadableStream<Uint8Array>;
}

/** Why a request got no answer. */
class NoAnswer extends Error {}

interface Multipart {
  key: string;
  id: string;
  /** ETags of the parts sent, in order. */
  parts: string[];
}

/** A bucket (or a prefix of one) as one store uses it. */
export class S3Client {
  /** `s3://bucket[/prefix]`. */
  readonly name: string;
  readonly location: S3Location;
  readonly purpose: S3Purpose;
  readonly #signer: SigV4Signer;
  readonly #timeoutMs: number;
  readonly #partSize: number;
  readonly #probeEvery: number;
  readonly #warn: (message: string, data: Record<string, unknown>) => void;
  #state: FilesState = "ok";
  #seenAt = 0;
  #probing = false;
  #closed = false;

  constructor(
    location: S3Location,
    credentials: S3Credentials,
    options: S3Options,
    purpose: S3Purpose = FILES_PURPOSE,
  ) {
    this.location = location;
    this.purpose = purpose;
    this.name = `s3://${location.bucket}${
      location.prefix ? `/${location.prefix}` : ""
    }`;
    this.#signer = new SigV4Signer({
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      sessionToken: credentials.sessionToken,
      service: "s3",
      region: location.region,
    });
    this.#timeoutMs = options.timeoutMs;
    this.#partSize = options.partSize ?? PART_SIZE;
    this.#probeEvery = options.probeEveryMs ?? 10_000;
    this.#warn = options.warn ?? (() => {});
  }

  /** The key of `place` (a path relative to the prefix): always under the prefix. */
  key(place: string): string {
    return this.location.prefix ? `${this.location.prefix}/${place}` : place;
  }

  /** The URL of an object key (or of the bucket when `key` is ""). */
  #url(key: string, query = ""): string {
    const { endpoint, bucket, pathStyle } = this.location;
    const path = key.split("/").map(encodeURIComponent).join("/");
    const base = pathStyle ? `${endpoint}/${bucket}/${path}` : (() => {
      const u = new URL(endpoint);
      return `${u.protocol}//${bucket}.${u.host}${
        u.pathname.replace(/\/$/, "")
      }/${path}`;
    })();
    return query ? `${base}?${query}` : base;
  }

  #seen(state: FilesState): void {
    this.#state = state;
    this.#seenAt = Date.now();
  }

  /**
   * Sends a request; resolves with its answer (its whole body as text)
   * within `timeoutMs`, else throws `NoAnswer`.
   */
  async #send(
    method: string,
    key: string,
    init: {
      query?: string;
      headers?: Record<string, string>;
      body?: Uint8Array | string;
      timeoutMs?: number;
    } = {},
  ): Promise<S3Answer> {
    const res = await this.#open(method, key, init);
    try {
      const text = await res.response.text();
      return {
        status: res.response.status,
        headers: res.response.headers,
        text,
      };
    } catch (err) {
      throw new NoAnswer(reason(err));
    } finally {
      res.done();
    }
  }

  /** Sends a request and returns its response once the head is in (the body is the caller's). */
  async #open(
    method: string,
    key: string,
    init: {
      query?: string;
      headers?: Record<string, string>;
      body?: Uint8Array | string;
      timeoutMs?: number;
    } = {},
  ): Promise<
    { response: Response; controller: AbortController; done: () => void }
  > {
    const controller = new AbortController();
    const ms = init.timeoutMs ?? this.#timeoutMs;
    const timer = setTimeout(
      () => controller.abort(new NoAnswer(`no answer within ${ms} ms`)),
      ms,
    );
    try {
      const url = new URL(this.#url(key, init.query));
      const headers = new Headers(init.headers);
      // The bytes as stored: fetch asks for gzip and br by default, and a
      // compressing proxy or CDN in front of S3 would answer a GET with a
      // Content-Length that is not the object's size, then hand over the
      // bytes uncompressed (a download's size is taken from its GET).
      headers.set("accept-encoding", "identity");
      const response = await fetch(url, {
        method,
        headers: this.#signer.sign(method, url, headers),
        body: init.body as BodyInit | undefined,
        signal: controller.signal,
      });
      return { response, controller, done: () => clearTimeout(timer) };
    } catch (err) {
      clearTimeout(timer);
      const cause = controller.signal.aborted ? controller.signal.reason : err;
      throw new NoAnswer(reason(cause));
    }
  }

  /** Records and logs a failed request; returns the client's 503. */
  #failed(op: string, err: unknown, answer?: S3Answer): Error {
    this.#seen("unavailable");
    const detail: Record<string, unknown> = { store: this.name, op };
    if (answer) {
      detail.status = answer.status;
      const code = errorCode(answer.text);
      if (code) detail.code = code;
    } else detail.error = reason(err);
    this.#warn(this.purpose.failure, detail);
    return this.purpose.unavailable();
  }

  /**
   * Checks the bucket can be used (start-up): throws an Error whose
   * one-line message says what is wrong and what to do.
   */
  async check(): Promise<void> {
    const option = this.purpose.option;
    const where = `Cannot use ${option} ${this.name}`;
    let answer: S3Answer;
    try {
      answer = await this.#send("GET", this.key(PROBE_KEY));
    } catch (err) {
      this.#seen("unavailable");
      throw new Error(
        `${where}: cannot reach ${this.location.endpoint} (${
          reason(err)
        }); check endpoint= in the ${option} URL and that the S3 server runs`,
      );
    }
    const code = errorCode(answer.text);
    if (answer.status === 200 || code === "NoSuchKey") {
      this.#seen("ok");
      return;
    }
    this.#seen("unavailable");
    const access =
      "MB_S3_ACCESS_KEY_ID and MB_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)";
    if (code === "NoSuchBucket" || (answer.status === 404 && !code)) {
      throw new Error(
        `${where}: bucket ${this.location.bucket} does not exist at ${this.location.endpoint}; create it, or name another bucket in ${option}`,
      );
    }
    if (
      code === "InvalidAccessKeyId" || code === "SignatureDoesNotMatch" ||
      code === "InvalidToken" || code === "ExpiredToken"
    ) {
      throw new Error(
        `${where}: the S3 server refused the credentials (${code}); set ${access} to a key of bucket ${this.location.bucket}`,
      );
    }
    if (code === "AccessDenied" || answer.status === 403) {
      throw new Error(
        `${where}: the key may not use bucket ${this.location.bucket} (${
          code ?? "403"
        }); allow it s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket there, or set ${access} to another key`,
      );
    }
    if (
      code === "PermanentRedirect" || code === "AuthorizationHeaderMalformed" ||
      answer.status === 301
    ) {
      throw new Error(
        `${where}: bucket ${this.location.bucket} is in another region (${
          code ?? "301"
        }); set region= in the ${option} URL`,
      );
    }
    throw new Error(
      `${where}: the S3 server answered ${answer.status}${
        code ? ` ${code}` : ""
      }; check the ${option} URL and the S3 server's log`,
    );
  }

  /**
   * Its state from what it saw lately, at no cost (a probe of its own starts
   * in the background when that is stale).
   */
  state(): FilesState {
    if (
      !this.#probing && !this.#closed &&
      Date.now() - this.#seenAt >= this.#probeEvery
    ) {
      this.#probing = true;
      this.#probe().finally(() => this.#probing = false);
    }
    return this.#state;
  }

  async #probe(): Promise<void> {
    try {
      const a = await this.#send("GET", this.key(PROBE_KEY), {
        timeoutMs: Math.min(this.#timeoutMs, 5000),
      });
      const ok = a.status === 200 || errorCode(a.text) === "NoSuchKey";
      this.#seen(ok ? "ok" : "unavailable");
    } catch {
      this.#seen("unavailable");
    }
  }

  /**
   * Writes the object at `key` from `chunks` (read as they come: at most a
   * part in memory). When `chunks` throws or a request fails it throws and
   * no object is made (a multipart upload is aborted), except when the
   * store did not answer a one-request PUT: the object may have landed.
   */
  async write(
    key: string,
    chunks: AsyncIterable<Uint8Array>,
    headers: Record<string, string>,
  ): Promise<void> {
    let held: Uint8Array[] = [];
    let heldSize = 0;
    let upload: Multipart | undefined;
    const take = (size: number): Uint8Array => {
      const out = new Uint8Array(size);
      let at = 0;
      while (at < size) {
        const c = held[0];
        const n = Math.min(c.length, size - at);
        out.set(c.subarray(0, n), at);
        at += n;
        if (n === c.length) held.shift();
        else held[0] = c.subarray(n);
      }
      heldSize -= size;
      return out;
    };
    try {
      for await (const chunk of chunks) {
        if (chunk.length === 0) continue;
        held.push(chunk);
        heldSize += chunk.length;
        while (heldSize >= this.#partSize) {
          upload ??= await this.#startMultipart(key, headers);
          await this.#uploadPart(upload, take(this.#partSize));
        }
      }
      if (!upload) {
        await this.put(key, take(heldSize), headers);
        return;
      }
      if (heldSize > 0) await this.#uploadPart(upload, take(heldSize));
      await this.#completeMultipart(upload);
    } catch (err) {
      held = [];
      // Not awaited: a store that is down would hold the request twice as long.
      if (upload) this.#abortMultipart(upload);
      throw err;
    }
  }

  /** Writes a small object whole with one PUT (a reader gets the old one or the new one). */
  async put(
    key: string,
    bytes: Uint8Array,
    headers: Record<string, string>,
  ): Promise<void> {
    let a: S3Answer;
    try {
      a = await this.#send("PUT", key, { headers, body: bytes });
    } catch (err) {
      throw this.#failed("PUT", err);
    }
    if (a.status !== 200) throw this.#failed("PUT", undefined, a);
    this.#seen("ok");
  }

  async #startMultipart(
    key: string,
    headers: Record<string, string>,
  ): Promise<Multipart> {
    let a: S3Answer;
    try {
      a = await this.#send("POST", key, { query: "uploads=", headers });
    } catch (err) {
      throw this.#failed("CreateMultipartUpload", err);
    }
    const id = /<UploadId>([^<]+)<\/UploadId>/.exec(a.text)?.[1];
    if (a.status !== 200 || !id) {
      throw this.#failed("CreateMultipartUpload", undefined, a);
    }
    return { key, id: unescapeXml(id), parts: [] };
  }

  async #uploadPart(upload: Multipart, body: Uint8Array): Promise<void> {
    const n = upload.parts.length + 1;
    let a: S3Answer;
    try {
      a = await this.#send("PUT", upload.key, {
        query: `partNumber=${n}&uploadId=${encodeURIComponent(upload.id)}`,
        body,
      });
    } catch (err) {
      throw this.#failed("UploadPart", err);
    }
    const etag = a.headers.get("etag");
    if (a.status !== 200 || !etag) {
      throw this.#failed("UploadPart", undefined, a);
    }
    upload.parts.push(etag);
    this.#seen("ok");
  }

  async #completeMultipart(upload: Multipart): Promise<void> {
    const body = `<CompleteMultipartUpload>${
      upload.parts.map((etag, i) =>
        `<Part><PartNumber>${i + 1}</PartNumber><ETag>${
          escapeXml(etag)
        }</ETag></Part>`
      ).join("")
    }</CompleteMultipartUpload>`;
    let a: S3Answer;
    try {
      a = await this.#send("POST", upload.key, {
        query: `uploadId=${encodeURIComponent(upload.id)}`,
        headers: { "content-type": "application/xml" },
        body,
      });
    } catch (err) {
      throw this.#failed("CompleteMultipartUpload", err);
    }
    // S3 may answer 200 and put an error in the body.
    if (a.status !== 200 || /<Error>/.test(a.text)) {
      throw this.#failed("CompleteMultipartUpload", undefined, a);
    }
    this.#seen("ok");
  }

  #abortMultipart(upload: Multipart): void {
    this.#send("DELETE", upload.key, {
      query: `uploadId=${encodeURIComponent(upload.id)}`,
    }).then((a) => {
      if (a.status >= 300 && a.status !== 404) {
        this.#failed("AbortMultipartUpload", undefined, a);
      }
    }, (err) => {
      // Its parts stay until the bucket's lifecycle rule removes them
      // (docs/operations/files.md); they are no object.
      this.#failed("AbortMultipartUpload", err);
    });
  }

  /** The object's size and time, or undefined when there is none. */
  async head(key: string): Promise<S3Head | undefined> {
    let a: S3Answer;
    try {
      a = await this.#send("HEAD", key);
    } catch (err) {
      throw this.#failed("HEAD", err);
    }
    if (a.status === 404) {
      this.#seen("ok");
      return undefined;
    }
    if (a.status !== 200) throw this.#failed("HEAD", undefined, a);
    this.#seen("ok");
    const modified = new Date(a.headers.get("last-modified") ?? 0);
    return {
      size: Number(a.headers.get("content-length") ?? 0),
      modified: isNaN(modified.getTime()) ? new Date(0) : modified,
      headers: a.headers,
    };
  }

  /**
   * The object's bytes (all, or `range`), or undefined when there is none.
   * A body that stalls for `timeoutMs` errors.
   */
  async read(
    key: string,
    range?: ByteRange,
  ): Promise<ReadableStream<Uint8Array> | undefined> {
    const got = await this.#get(
      key,
      range && `bytes=${range.start}-${range.end}`,
    );
    if (got === "unsatisfiable") {
      throw this.#failed("GET", undefined, {
        status: 416,
        headers: new Headers(),
        text: "",
      });
    }
    if (!got) return undefined;
    // A server that ignores Range answers 200 with everything: cut it here.
    return range && got.response.status === 200
      ? slice(got.body, range.start, range.end - range.start + 1)
      : got.body;
  }

  /**
   * The object, its size, time and bytes (all, or those `range` comes to:
   * lib/files/byte_range.ts `resolveRange`) from one GET, whose answer tells
   * the size (`Content-Length`, or a 206's `Content-Range`) and the time;
   * undefined when there is none. Only a range S3 reads otherwise than
   * Moonbase costs a second request: a 416 (S3 tells no size then: a HEAD),
   * or other bytes than Moonbase's reading (a GET of those). A body that
   * stalls for `timeoutMs` errors.
   */
  async open(key: string, range?: RangeAsked): Promise<S3Opened | undefined> {
    const got = await this.#get(key, range && rangeHeader(range));
    if (got === "unsatisfiable") {
      const head = await this.head(key);
      if (!head) return undefined;
      const bytes = range && resolveRange(range, head.size);
      return bytes ? await this.#reread(key, head, bytes) : head;
    }
    if (!got) return undefined;
    const { response, body } = got;
    const total = response.status === 206
      ? /\/(\d+)\s*$/.exec(response.headers.get("content-range") ?? "")?.[1]
      : response.headers.get("content-length");
    const modified = new Date(response.headers.get("last-modified") ?? 0);
    const file = {
      size: Number(total),
      modified: isNaN(modified.getTime()) ? new Date(0) : modified,
      headers: response.headers,
    };
    if (total === null || total === undefined || !(file.size >= 0)) {
      // No size in the answer (S3 always sends one): asked for it.
      await body.cancel().catch(() => {});
      const head = await this.head(key);
      if (!head) return undefined;
      const bytes = range && resolveRange(range, head.size);
      if (range && !bytes) return head;
      return await this.#reread(key, head, bytes);
    }
    if (!range) {
      if (response.status === 200) return { ...file, body };
      await body.cancel().catch(() => {});
      return await this.#reread(key, file, undefined);
    }
    const bytes = resolveRange(range, file.size);
    if (!bytes) {
      await body.cancel().catch(() => {});
      return file;
    }
    if (response.status === 200) {
      // A server that ignores Range answers 200 with everything: cut it here.
      return {
        ...file,
        range: bytes,
        body: slice(body, bytes.start, bytes.end - bytes.start + 1),
      };
    }
    const served = /^bytes (\d+)-(\d+)\//.exec(
      response.headers.get("content-range") ?? "",
    );
    if (
      served && Number(served[1]) === bytes.start &&
      Number(served[2]) === bytes.end
    ) {
      return { ...file, range: bytes, body };
    }
    await body.cancel().catch(() => {});
    return await this.#reread(key, file, bytes);
  }

  /** `file` with its bytes (`range`, or all) read by a GET of their own. */
  async #reread(
    key: string,
    file: S3Head,
    range: ByteRange | undefined,
  ): Promise<S3Opened | undefined> {
    const body = await this.read(key, range);
    return body && { ...file, range, body };
  }

  /**
   * One GET (`range`: its Range header): the answer of a 200 or a 206 with
   * its body (erroring when it stalls for `timeoutMs`), "unsatisfiable"
   * (416), or undefined when there is no such object.
   */
  async #get(
    key: string,
    range: string | undefined,
  ): Promise<
    | { response: Response; body: ReadableStream<Uint8Array> }
    | "unsatisfiable"
    | undefined
  > {
    let opened;
    try {
      opened = await this.#open("GET", key, {
        headers: range ? { range } : undefined,
      });
    } catch (err) {
      throw this.#failed("GET", err);
    }
    const { response, controller, done } = opened;
    done();
    if (response.status === 404 || response.status === 416) {
      this.#seen("ok");
      await response.body?.cancel().catch(() => {});
      return response.status === 404 ? undefined : "unsatisfiable";
    }
    if (
      !response.body ||
      (response.status !== 200 && response.status !== 206)
    ) {
      let text = "";
      try {
        text = await response.text();
      } catch { /* the status says enough */ }
      throw this.#failed("GET", undefined, {
        status: response.status,
        headers: response.headers,
        text,
      });
    }
    this.#seen("ok");
    const body = stallGuard(
      response.body,
      this.#timeoutMs,
      () => {
        controller.abort(new NoAnswer("download stalled"));
        this.#failed("GET", new NoAnswer("the download's body stalled"));
      },
    );
    return { response, body };
  }

  /**
   * Removes an object: true once it is gone (removed now, or missing);
   * false (logged) when the store did not answer or refused.
   */
  async remove(key: string): Promise<boolean> {
    let a: S3Answer;
    try {
      a = await this.#send("DELETE", key);
    } catch (err) {
      this.#failed("DELETE", err);
      return false;
    }
    if (a.status === 204 || a.status === 200 || a.status === 404) {
      this.#seen("ok");
      return true;
    }
    this.#failed("DELETE", undefined, a);
    return false;
  }

  /**
   * The objects directly under the prefix (not those under a deeper
   * `…/`), a page of up to 1000 keys per request; throws the store's
   * `unavailable` error when a request fails.
   */
  async list(): Promise<S3Object[]> {
    const root = this.location.prefix ? `${this.location.prefix}/` : "";
    const out: S3Object[] = [];
    let token = "";
    for (;;) {
      const q = new URLSearchParams({
        "list-type": "2",
        prefix: root,
        delimiter: "/",
      });
      if (token) q.set("continuation-token", token);
      // Sent in S3's sorted form (the signature sorts it anyway).
      q.sort();
      let a: S3Answer;
      try {
        a = await this.#send("GET", "", { query: q.toString() });
      } catch (err) {
        throw this.#failed("ListObjectsV2", err);
      }
      if (a.status !== 200) throw this.#failed("ListObjectsV2", undefined, a);
      for (const m of a.text.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const key = unescapeXml(/<Key>([^<]*)<\/Key>/.exec(m[1])?.[1] ?? "");
        if (!key.startsWith(root) || key.length === root.length) continue;
        const size = Number(/<Size>(\d+)<\/Size>/.exec(m[1])?.[1] ?? NaN);
        const modified = new Date(
          /<LastModified>([^<]*)<\/LastModified>/.exec(m[1])?.[1] ?? "",
        );
        out.push({
          place: key.slice(root.length),
          size: Number.isFinite(size) ? size : 0,
          modified: isNaN(modified.getTime()) ? new Date(0) : modified,
        });
      }
      const more = /<IsTruncated>true<\/IsTruncated>/.test(a.text);
      token = unescapeXml(
        /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(
          a.text,
        )?.[1] ?? "",
      );
      this.#seen("ok");
      if (!more || !token) return out;
    }
  }

  /** Stops background probes. */
  close(): void {
    this.#closed = true;
  }
}

/** S3's error code (`<Code>…</Code>`) from an error body, if any. */
function errorCode(text: string): string | undefined {
  const code = /<Code>([A-Za-z0-9.]{1,64})<\/Code>/.exec(text)?.[1];
  return code;
}

function reason(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split("\n")[0].slice(0, 200);
}

function escapeXml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

function unescapeXml(s: string): string {
  return s.replaceAll("&quot;", '"').replaceAll("&apos;", "'")
    .replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/**
 * `body`, erroring when a read waits more than `idleMs` for the store (a
 * slow reader downstream does not count: the clock runs only while this
 * stream waits for its source).
 */
function stallGuard(
  body: ReadableStream<Uint8Array>,
  idleMs: number,
  onStall: () => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const timer = setTimeout(onStall, idleMs);
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (err) {
        controller.error(err);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(why) {
      return reader.cancel(why);
    },
  }, { highWaterMark: 0 });
}

/** Bytes `start` .. `start + length - 1` of a stream. */
function slice(
  body: ReadableStream<Uint8Array>,
  start: number,
  length: number,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let skip = start, left = length;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (true) {
        if (left <= 0) {
          controller.close();
          await reader.cancel().catch(() => {});
          return;
        }
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        let c = value;
        if (skip > 0) {
          const n = Math.min(skip, c.length);
          skip -= n;
          c = c.subarray(n);
        }
        if (c.length === 0) continue;
        if (c.length > left) c = c.subarray(0, left);
        left -= c.length;
        controller.enqueue(c);
        return;
      }
    },
    cancel(why) {
      return reader.cancel(why);
    },
  }, { highWaterMark: 0 });
}
