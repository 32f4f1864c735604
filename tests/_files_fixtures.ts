/**
 * Fixtures of the files suites (`tests/files_*_test.ts`): byte samples, a
 * hand-built multipart encoder (exact file names on the wire), file-route
 * requests, disk snapshots, and the entities the suites upload into. Each
 * suite creates only the entities it needs, and each case its own records.
 *
 * @module
 */

import { join, relative } from "node:path";
import {
  assert,
  assertEquals,
  assertStatus,
  type Reply,
  seedUser,
  type TestServer,
} from "./_server.ts";

/** What every stored name must look like. */
export const STORED =
  /^[A-Za-z0-9][A-Za-z0-9_-]*_[A-Za-z0-9]{10}(\.[a-z0-9]{1,10})?$/;
export const KIB = 1024;
export const MIB = 1024 * 1024;
/** Upload cap of the suites' servers. */
export const CAP = MIB;
/** Config of the suites' servers (`trustProxy` for per-test login IPs). */
export const CONFIG = { trustProxy: true, maxUploadSize: CAP };
/** 20 bytes of text. */
export const TXT = "0123456789abcdefghij";
/** The leading bytes of a PNG (signature and IHDR). */
export const PNG: Uint8Array = (() => {
  const b = new Uint8Array(64);
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  b.set(new TextEncoder().encode("IHDR"), 12);
  return b;
})();
export const SVG =
  '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';
export const HTML = "<!DOCTYPE html><html><script>alert(1)</script></html>";
export const MISSING_ID = "01900000-0000-7000-8000-000000000000";
const enc = new TextEncoder();
const dec = new TextDecoder();

// --- requests --------------------------------------------------------------

/** One part of a hand-built multipart body. */
export type Part =
  | { name: string; value: string }
  | {
    name: string;
    filename: string;
    data: Uint8Array | string;
    type?: string;
    /** Replaces the whole Content-Disposition value. */
    disposition?: string;
  };

/** A multipart body built byte by byte (exact file names on the wire). */
export function multipart(
  parts: Part[],
): { body: Uint8Array<ArrayBuffer>; type: string } {
  const boundary = `----mbtest${crypto.randomUUID().replaceAll("-", "")}`;
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    if ("value" in p) {
      chunks.push(enc.encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`,
      ));
      continue;
    }
    const disp = p.disposition ??
      `form-data; name="${p.name}"; filename="${p.filename}"`;
    chunks.push(enc.encode(
      `--${boundary}\r\nContent-Disposition: ${disp}\r\nContent-Type: ${
        p.type ?? "application/octet-stream"
      }\r\n\r\n`,
    ));
    chunks.push(typeof p.data === "string" ? enc.encode(p.data) : p.data);
    chunks.push(enc.encode("\r\n"));
  }
  chunks.push(enc.encode(`--${boundary}--\r\n`));
  const size = chunks.reduce((n, c) => n + c.length, 0);
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.length;
  }
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/** A body of unknown length (chunked transfer, no Content-Length). */
function streamOf(
  bytes: Uint8Array,
  chunk = 64 * KIB,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, at + chunk));
      at += chunk;
    },
  });
}

/** A fetch response parsed like the harness's replies. */
export async function toReply(res: Response): Promise<Reply> {
  const text = await res.text();
  let body: Reply["body"] = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch { /* not JSON */ }
  return {
    status: res.status,
    headers: res.headers,
    body,
    text,
    data: body?.data,
    error: body?.error ?? "",
  };
}

/** Options of a multipart write. */
export interface SendOptions {
  token?: string;
  headers?: Record<string, string>;
  /** Send the body as a stream (no Content-Length). */
  stream?: boolean;
}

/** Sends a multipart write (a FormData, or hand-built parts). */
export async function sendForm(
  s: TestServer,
  method: string,
  path: string,
  form: FormData | Part[],
  o: SendOptions = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: BodyInit;
  if (form instanceof FormData) {
    body = form;
  } else {
    const m = multipart(form);
    headers["content-type"] = m.type;
    body = o.stream ? streamOf(m.body) : m.body;
  }
  const init: RequestInit & { duplex?: "half" } = { method, headers, body };
  if (o.stream) init.duplex = "half";
  return await toReply(await fetch(s.url + path, init));
}

/** A GET/HEAD of a file route; `text` is the body. */
export async function getFile(
  s: TestServer,
  path: string,
  o: { method?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  const res = await fetch(s.url + path, {
    method: o.method ?? "GET",
    headers,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Sends raw bytes over TCP; returns what arrived within `ms` (or on close). */
export async function rawHttp(
  s: TestServer,
  request: string,
  ms = 5000,
  until = "\r\n\r\n",
): Promise<string> {
  const { hostname, port } = new URL(s.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  let got = "";
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch { /* closed */ }
  }, ms);
  try {
    await conn.write(enc.encode(request)).catch(() => 0);
    const buf = new Uint8Array(16 * KIB);
    while (!got.includes(until)) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      got += dec.decode(buf.subarray(0, n));
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
  return got;
}

/** A browser-style File. */
export function file(data: Uint8Array | string, name: string, type = ""): File {
  return new File([typeof data === "string" ? data : data.slice()], name, {
    type,
  });
}

/** `n` bytes of one value. */
export function bytesOf(n: number, fill = 0x61): Uint8Array {
  return new Uint8Array(n).fill(fill);
}

/** Decodes a JWT's payload (no verification). */
export function jwtPayload(token: string): Record<string, unknown> {
  const b64 = token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
  return JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)));
}

// --- disk ------------------------------------------------------------------

/** Every file under `dir`, as paths relative to `base`, sorted. */
export async function walk(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const p = join(dir, e.name);
      if (e.isDirectory) out.push(...await walk(p, base));
      else out.push(relative(base, p));
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

/** Everything under `<dataDir>/files`. */
export function filesSnapshot(s: TestServer): Promise<string[]> {
  return walk(join(s.dataDir, "files"));
}

/** The directory of an entity's files. */
export function entityDir(s: TestServer, entity: string): string {
  const e = s.app.schemas.get(entity);
  assert(e, `entity ${entity} exists`);
  return join(s.dataDir, "files", e.id);
}

/** Whether anything (even a dangling link) is at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** Asserts each stored name is (or is not) in the entity's directory. */
export async function assertOnDisk(
  s: TestServer,
  entity: string,
  names: string[],
  present: boolean,
  msg: string,
): Promise<void> {
  for (const n of names) {
    assertEquals(
      await exists(join(entityDir(s, entity), n)),
      present,
      `${msg}: ${n} ${present ? "must exist" : "must be gone"}`,
    );
  }
}

// --- records ---------------------------------------------------------------

/** The number of records of an entity (read as the admin). */
export async function count(s: TestServer, entity: string): Promise<number> {
  const r = await s.request("GET", `/api/v1/entities/${entity}?count=true`, {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, `count ${entity}`);
  return r.data.total;
}

/** One record, read as the admin. */
export async function record(
  s: TestServer,
  entity: string,
  id: string,
): Promise<Record<string, unknown>> {
  const r = await s.request("GET", `/api/v1/entities/${entity}/${id}`, {
    token: await s.adminToken(),
  });
  assertStatus(r, 200, `read ${entity}/${id}`);
  return r.data;
}

/** Asserts a value is a stored name. */
export function assertStored(
  name: unknown,
  msg: string,
): asserts name is string {
  assert(
    typeof name === "string" && STORED.test(name),
    `${msg}: stored name ${JSON.stringify(name)} must match ${STORED}`,
  );
}

/** A `files` value as a list (an unset field may read as null). */
export function listOf(v: unknown): unknown[] {
  return Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];
}

/** Creates a record by multipart as the admin (201 expected). */
export async function createWith(
  s: TestServer,
  entity: string,
  parts: Part[],
): Promise<Record<string, unknown> & { id: string }> {
  const r = await sendForm(s, "POST", `/api/v1/entities/${entity}`, parts, {
    token: await s.adminToken(),
  });
  assertStatus(r, 201, `create ${entity} record`);
  return r.data;
}

// --- entities --------------------------------------------------------------

export const PUBLIC = { mode: "public", expr: "" };
const OWNER = { mode: "custom", expr: "record.owner == auth.id" };
const fileField = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: "file",
  ...extra,
});

/** The suites' entities, by name (`kids` needs `parents` first). */
const ENTITIES = {
  /** An auth entity whose avatar must be an image; guests may sign up. */
  users: {
    type: "auth",
    fields: [fileField("avatar", { mime_types: ["image/*"] })],
    rules: { add: PUBLIC },
  },
  /** Public reads, admin-only writes; every value type next to the files. */
  pub: {
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "n", type: "int" },
      { name: "b", type: "bool" },
      { name: "j", type: "json" },
      { name: "slug", type: "string", unique: true },
      fileField("cover"),
      { name: "att", type: "files" },
      { name: "lim", type: "files", max: 2 },
    ],
    rules: { list: PUBLIC, get: PUBLIC },
  },
  /** Fields restricted by `mime_types`. */
  imgs: {
    type: "base",
    fields: [
      fileField("pic", { mime_types: ["image/*"] }),
      fileField("vec", { mime_types: ["image/svg+xml"] }),
    ],
    rules: { list: PUBLIC, get: PUBLIC },
  },
  /** Every rule: the record's owner. */
  priv: {
    type: "base",
    fields: [{ name: "owner", type: "string" }, fileField("doc")],
    rules: {
      list: OWNER,
      get: OWNER,
      add: OWNER,
      update: OWNER,
      delete: OWNER,
    },
  },
  /** Admin-only rules. */
  staff: { type: "base", fields: [fileField("doc")] },
  /** `get` for any signed-in user. */
  members: {
    type: "base",
    fields: [fileField("doc")],
    rules: { get: { mode: "auth", expr: "" } },
  },
  parents: { type: "base", fields: [fileField("pf")] },
  /** Children deleted with their parent. */
  kids: {
    type: "base",
    fields: [
      {
        name: "parent",
        type: "relation",
        foreign_key: { entity: "parents", on_delete: "cascade" },
      },
      fileField("kf"),
    ],
  },
  /** Targets of concurrent writes. */
  conc: {
    type: "base",
    fields: [{ name: "att", type: "files" }, fileField("one")],
  },
} as const;

/** The name of one of the suites' entities. */
export type EntityName = keyof typeof ENTITIES;

/** Creates entities through the schema API, in the given order. */
export async function createEntities(
  s: TestServer,
  ...names: EntityName[]
): Promise<void> {
  const token = await s.adminToken();
  for (const name of names) {
    await createEntity(s, { name, ...ENTITIES[name] }, token);
  }
}

/** Creates one entity from a schema body; returns the schema. */
export async function createEntity(
  s: TestServer,
  body: Record<string, unknown>,
  token?: string,
): Promise<Record<string, unknown> & { id: string }> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: token ?? await s.adminToken(),
    body,
  });
  assertStatus(r, 201, `create entity ${body.name}`);
  return r.data;
}

/** A user of `users` with a session token. */
export interface User {
  id: string;
  token: string;
}

/**
 * Inserts a user of the `users` entity (see `seedUser`) and issues a session
 * token directly; sign-up and login by multipart have their own case.
 */
export async function userOf(s: TestServer, email: string): Promise<User> {
  const u = await seedUser(s, "users", { email }, "password123");
  const users = s.app.schemas.get("users")!;
  const token = (await s.app.sessions.issue(users, u)).token;
  return { id: u.id, token };
}
