/**
 * Fixtures of the auth suites (`tests/auth_*_test.ts`): a server with the
 * standard auth schemas, users and tokens made without scrypt, logins and
 * sign-ups from fresh client addresses, and token decoding.
 *
 * Logins and sign-ups go through rate limiters, so the servers run with
 * `trustProxy` and each such request carries its own `X-Forwarded-For`.
 *
 * @module
 */

import type { AppConfig } from "../lib/config.ts";
import { uuidv7 } from "../lib/ids.ts";
import {
  ADMIN_PASSWORD,
  assert,
  assertEquals,
  assertStatus,
  type Reply,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";

/** The exact body of every "no such auth route" answer. */
export const ROUTE_NOT_FOUND =
  '{"status":404,"data":null,"error":"Route Not Found"}';

/** Password of the users `fastUser` creates. */
export const USER_PW = "user-password-1";

/**
 * Scrypt hashes (N=2^15, r=8, p=1) of the fixture passwords, computed once
 * and written here: every test file runs in its own isolate, where hashing
 * them again would cost ~0.3 s of CPU apiece. Logins verify them like any
 * stored hash (the parameters travel inside the string).
 */
const KNOWN_HASHES: Record<string, string> = {
  [USER_PW]:
    "scrypt$32768$8$1$5b2LBn7V6rQdXWQ40btZQw==$7jtu7gpDC3oIKCWuBDCNMRIO9HjZ+OtLZVpIpGVOGW4=",
  [ADMIN_PASSWORD]:
    "scrypt$32768$8$1$rttO7qM8FlK6erjvH0hkYQ==$KwJYW3IvZNatSjlupvNmbewfbU1XqeMKJIt3TR1O1OE=",
};

/** Inserts a user row with a known hash; returns the stored record. */
async function insertUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
  hash: string,
): Promise<Record<string, unknown> & { id: string }> {
  const now = new Date().toISOString();
  const row: Record<string, string | number | boolean> = {
    id: uuidv7(),
    created: now,
    updated: now,
    ...values,
    password: hash,
    verified: s.app.storage.dialect.encode("bool", false) as number | boolean,
  };
  const cols = Object.keys(row).map((c) => `"${c}"`).join(", ");
  await s.app.storage.run(
    `INSERT INTO "${entity}" (${cols}) VALUES (${
      Object.keys(row).map(() => "?").join(", ")
    })`,
    Object.values(row),
  );
  const rec = await s.app.schemas.get(entity)!.read(String(row.id));
  assert(rec, `no ${entity} ${row.id}`);
  return rec as Record<string, unknown> & { id: string };
}

/**
 * The harness admin's token, with its row written from a known hash first
 * (the harness would hash `ADMIN_PASSWORD` once per test file).
 */
export async function fixtureAdmin(s: TestServer): Promise<string> {
  const admins = s.app.schemas.get("mb_admins")!;
  if (!await admins.queryFromCols("admin@example.com", ["email"])) {
    await insertUser(
      s,
      "mb_admins",
      { email: "admin@example.com" },
      KNOWN_HASHES[ADMIN_PASSWORD],
    );
    s.app.setupToken = undefined;
  }
  return await s.adminToken();
}

/** Rule: anyone. */
export const PUBLIC = { mode: "public", expr: "" };
/** Rule: any signed-in user. */
export const AUTH = { mode: "auth", expr: "" };

let ipSeq = 0;
/** A fresh client address, so no test trips a per-address rate limit. */
export function nextIp(): string {
  ipSeq++;
  return `10.${(ipSeq >> 16) & 255}.${(ipSeq >> 8) & 255}.${ipSeq & 255}`;
}

/** Claims of a Moonbase token. */
export interface Claims {
  sub: string;
  entity: string;
  jti: string;
  iat: number;
  exp: number;
}

/** Decodes one base64url part of a token. */
export function b64urlDecode(s: string): string {
  const b = s.replaceAll("-", "+").replaceAll("_", "/");
  const padded = b + "=".repeat((4 - (b.length % 4)) % 4);
  return new TextDecoder().decode(
    Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)),
  );
}

/** Encodes a string as one base64url part of a token. */
export function b64urlEncode(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

/** The claims of a token (unverified). */
export function claimsOf(token: string): Claims {
  return JSON.parse(b64urlDecode(token.split(".")[1]));
}

/** The protected header of a token. */
export function headerOf(token: string): { alg: string } {
  return JSON.parse(b64urlDecode(token.split(".")[0]));
}

/** The current time in whole seconds. */
export function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}

/** POSTs a login (scoped, legacy or admin) from a fresh client address. */
export function login(
  s: TestServer,
  path: string,
  body: Record<string, unknown>,
): Promise<Reply> {
  return s.request("POST", path, {
    body,
    headers: { "x-forwarded-for": nextIp() },
  });
}

/** Logs a user in through the route and returns the token. */
export async function userToken(
  s: TestServer,
  entity: string,
  identity: string,
  password = USER_PW,
): Promise<string> {
  const r = await login(s, `/api/v1/auth/${entity}/login`, {
    identity,
    password,
  });
  assertStatus(r, 200, `login ${identity}`);
  return r.data.token;
}

/** Creates a schema through the API (`fields` default to none). */
export async function createSchema(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: { fields: [], ...body },
  });
  assertStatus(r, 201, `create schema ${body.name}`);
}

/** Signs a user up through the records route, from a fresh address. */
export async function signup(
  s: TestServer,
  entity: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, {
    body,
    headers: { "x-forwarded-for": nextIp() },
  });
  assertStatus(r, 201, `signup ${body.email}`);
  return r.data;
}

/**
 * Creates a user of an auth entity with the password `USER_PW` (or
 * `password`) without paying for scrypt per user: for cases whose subject is
 * not sign-up itself. The email is stored lower-cased, as sign-up does.
 */
export async function fastUser(
  s: TestServer,
  entity: string,
  data: Record<string, string> & { email: string },
  password = USER_PW,
): Promise<Record<string, unknown> & { id: string }> {
  const values = { ...data, email: data.email.toLowerCase() };
  const known = KNOWN_HASHES[password];
  return known
    ? await insertUser(s, entity, values, known)
    : await seedUser(s, entity, values, password);
}

/** A token issued directly (no login route, no scrypt). */
export async function issue(
  s: TestServer,
  entity: string,
  id: unknown,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  const user = await e.read(String(id));
  assert(user, `no ${entity} ${id}`);
  return (await s.app.sessions.issue(e, user)).token;
}

/**
 * The schemas most auth cases share: `users` (auth; public sign-up, reads
 * for signed-in users, self-update), `members` (auth), `posts` (base) and
 * `hidden` (auth without API).
 */
export async function standardSchemas(
  s: TestServer,
  admin: string,
): Promise<void> {
  await createSchema(s, admin, {
    name: "users",
    type: "auth",
    fields: [{ name: "name", type: "string" }, {
      name: "role",
      type: "string",
    }],
    rules: {
      add: PUBLIC,
      get: AUTH,
      list: AUTH,
      update: { mode: "custom", expr: "record.id == auth.id" },
    },
  });
  await createSchema(s, admin, {
    name: "members",
    type: "auth",
    fields: [{ name: "team", type: "string" }],
    rules: { add: PUBLIC, get: AUTH },
  });
  await createSchema(s, admin, {
    name: "posts",
    type: "base",
    fields: [{ name: "title", type: "string" }],
    rules: { list: PUBLIC, get: PUBLIC },
  });
  await createSchema(s, admin, {
    name: "hidden",
    type: "auth",
    has_api: false,
    rules: { add: PUBLIC },
  });
}

/**
 * Runs `fn` on a fresh server (`trustProxy` on, plus `config`) that has an
 * admin and the standard schemas, and closes the server afterwards.
 */
export async function withAuthServer(
  db: "sqlite" | "postgres",
  fn: (s: TestServer, admin: string) => Promise<void>,
  config: AppConfig = {},
): Promise<void> {
  const s = await startServer(db, { trustProxy: true, ...config });
  try {
    const admin = await fixtureAdmin(s);
    await standardSchemas(s, admin);
    await fn(s, admin);
  } finally {
    await s.close();
  }
}

/** GET of a user record that needs a token (get rule `auth`). */
export function probe(
  s: TestServer,
  id: string,
  token?: string,
): Promise<Reply> {
  return s.request("GET", `/api/v1/entities/users/${id}`, { token });
}

/** Asserts a token reads the user record `id`. */
export async function assertTokenWorks(
  s: TestServer,
  id: string,
  token: string,
  msg: string,
): Promise<void> {
  const r = await probe(s, id, token);
  assertStatus(r, 200, msg);
  assertEquals(r.data.id, id, msg);
}

/** Asserts a token is refused (401 with an error and no data). */
export async function assertTokenRejected(
  s: TestServer,
  id: string,
  token: string,
  msg: string,
): Promise<void> {
  const r = await probe(s, id, token);
  assertStatus(r, 401, msg);
  assertEquals(r.body?.data, null, msg);
  assert(r.error.length > 0, `${msg}: an error message`);
}

/** A GET of the schema list: 200 with an admin token, 401 without one. */
export function adminProbe(s: TestServer, token: string): Promise<Reply> {
  return s.request("GET", "/api/v1/schemas", { token });
}
