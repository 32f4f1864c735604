/**
 * The `--files` URL (also `MB_FILES`): `local` (the data directory's
 * `files/`, the default) or
 * `s3://<bucket>[/<prefix>]?endpoint=<url>&region=<region>&path_style=true|false`,
 * with the key from `MB_S3_ACCESS_KEY_ID` / `MB_S3_SECRET_ACCESS_KEY` (or
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, and `AWS_SESSION_TOKEN`).
 *
 * @module
 */

import type { FileBackend } from "./backend.ts";
import { DiskBackend } from "./disk_backend.ts";
import {
  S3Backend,
  type S3Credentials,
  type S3Location,
  type S3Options,
} from "./s3_backend.ts";

/** A parsed `--files` value. */
export type FilesUrl = { kind: "local" } | ({ kind: "s3" } & S3Location);

const USE =
  "use local, or s3://<bucket>[/<prefix>]?endpoint=<url>&region=<region>&path_style=true|false";

/**
 * Parses a `--files` value (or a `--backups` one: the same form, `option`
 * names it in the error); throws an Error whose message says what to use.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseFilesUrl } from "moonbase/lib/files/files_url.ts";
 * assert.deepEqual(parseFilesUrl("local"), { kind: "local" });
 * assert.deepEqual(
 *   parseFilesUrl("s3://media/shop/prod?endpoint=http://127.0.0.1:9000&region=eu-west-1"),
 *   {
 *     kind: "s3",
 *     bucket: "media",
 *     prefix: "shop/prod",
 *     endpoint: "http://127.0.0.1:9000",
 *     region: "eu-west-1",
 *     pathStyle: true,
 *   },
 * );
 * const aws = parseFilesUrl("s3://media");
 * assert.equal(aws.kind === "s3" && aws.endpoint, "https://s3.us-east-1.amazonaws.com");
 * assert.throws(() => parseFilesUrl("s3://media/../x"));
 * ```
 */
export function parseFilesUrl(value: string, option = "--files"): FilesUrl {
  const bad = (why: string) =>
    new Error(`invalid ${option} ${JSON.stringify(value)}: ${why}; ${USE}`);
  if (value === "local") return { kind: "local" };
  if (!value.startsWith("s3://")) throw bad("unknown kind of store");
  const rest = value.slice("s3://".length);
  const q = rest.indexOf("?");
  const path = q < 0 ? rest : rest.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : rest.slice(q + 1));
  for (const k of params.keys()) {
    if (!["endpoint", "region", "path_style"].includes(k)) {
      throw bad(`unknown parameter ${k}`);
    }
  }
  const [bucket, ...segments] = path.replace(/\/+$/, "").split("/");
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket ?? "")) {
    throw bad(
      "the bucket name must be 3 to 63 lower-case letters, digits, dots and hyphens",
    );
  }
  for (const s of segments) {
    if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/.test(s)) {
      throw bad(
        "each part of the prefix must be letters, digits, '.', '_' or '-' (not starting with a dot)",
      );
    }
  }
  const region = params.get("region") ?? "us-east-1";
  if (!/^[a-z0-9-]{1,40}$/.test(region)) throw bad("invalid region");
  const given = params.get("endpoint");
  let endpoint = `https://s3.${region}.amazonaws.com`;
  if (given !== null) {
    let u: URL;
    try {
      u = new URL(given);
    } catch {
      throw bad("endpoint is not a URL");
    }
    if (
      (u.protocol !== "http:" && u.protocol !== "https:") || u.search ||
      u.hash || u.username || u.password
    ) {
      throw bad("endpoint must be an http(s) URL without query or user");
    }
    endpoint = `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
  }
  const style = params.get("path_style");
  if (style !== null && style !== "true" && style !== "false") {
    throw bad("path_style must be true or false");
  }
  return {
    kind: "s3",
    bucket,
    prefix: segments.join("/"),
    endpoint,
    region,
    // Endpoints of one's own (Ceph, MinIO…) mostly take path-style URLs.
    pathStyle: style === null ? given !== null : style === "true",
  };
}

/**
 * The key in the environment: `MB_S3_ACCESS_KEY_ID` /
 * `MB_S3_SECRET_ACCESS_KEY`, else the `AWS_` names; throws when missing.
 */
export function s3CredentialsFromEnv(
  store = "an S3 file store",
): S3Credentials {
  const env = (name: string) => Deno.env.get(name) || undefined;
  const accessKeyId = env("MB_S3_ACCESS_KEY_ID") ?? env("AWS_ACCESS_KEY_ID");
  const secretAccessKey = env("MB_S3_SECRET_ACCESS_KEY") ??
    env("AWS_SECRET_ACCESS_KEY");
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      `Cannot use ${store}: no key; set MB_S3_ACCESS_KEY_ID and MB_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`,
    );
  }
  const sessionToken = env("AWS_SESSION_TOKEN");
  return {
    accessKeyId,
    secretAccessKey,
    ...(sessionToken ? { sessionToken } : {}),
  };
}

/**
 * The backend a `--files` value names (not checked yet: call `check()`).
 * `credentials` default to the environment's.
 */
export function openBackend(
  value: string,
  dataDir: string,
  options: S3Options,
  credentials?: S3Credentials,
): FileBackend {
  const url = parseFilesUrl(value);
  if (url.kind === "local") return new DiskBackend(dataDir);
  const { kind: _, ...location } = url;
  return new S3Backend(
    location,
    credentials ?? s3CredentialsFromEnv(),
    options,
  );
}
