/**
 * Table-driven HTTP scenarios in the PocketBase style, plus helpers shared by
 * the black-box suites (entity creation, forged user tokens, snapshots).
 *
 * Each scenario runs against a FRESH server (one `startServer` per scenario,
 * so no scenario sees another's data), on every database via `forEachDb`.
 * `runScenarios(..., { fresh: "group" })` shares one server per group instead.
 *
 * @module
 */

import { SignJWT } from "jose";
import type { AppConfig } from "../lib/config.ts";
import {
  assert,
  assertEquals,
  forEachDb,
  type Reply,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";

/** Values a scenario's setup computes (ids, tokens) for its request. */
export type Vars = Record<string, string>;

/** One request with its expected outcome. */
export interface Scenario {
  name: string;
  method: string;
  /** Path; a function receives the vars filled by `setup`. */
  url: string | ((v: Vars) => string);
  /** JSON body (a string is sent as is); a function receives the vars. */
  body?: unknown;
  raw?: BodyInit;
  headers?: Record<string, string>;
  /** "admin" (default "none"), a literal token, or a function of the vars. */
  token?: "admin" | "none" | string | ((v: Vars) => string);
  /** Server config of this scenario (only with fresh servers). */
  config?: AppConfig;
  setup?: (s: TestServer, v: Vars) => Promise<void>;
  status: number;
  /** Substrings the response text must contain. */
  contains?: string[];
  /** Substrings the response text must not contain. */
  notContains?: string[];
  /** Entities whose schema and records must be identical before and after. */
  unchanged?: string[];
  expect?: (r: Reply, s: TestServer, v: Vars) => void | Promise<void>;
  after?: (s: TestServer, v: Vars) => Promise<void>;
}

/** A scenario in one line: `sc("name", "GET", "/path", 200, {...})`. */
export function sc(
  name: string,
  method: string,
  url: Scenario["url"],
  status: number,
  extra: Partial<Scenario> = {},
): Scenario {
  return { name, method, url, status, ...extra };
}

/** Checks what every response must satisfy: the envelope and the request id. */
export function checkInvariants(
  r: Reply,
  method = "GET",
  api = false,
): void {
  assert(r.headers.get("x-request-id"), "every response has X-Request-Id");
  if (r.status === 204 || method === "HEAD") {
    assertEquals(r.text, "", `${r.status} must have no body`);
    return;
  }
  const ct = r.headers.get("content-type") ?? "";
  if (!ct.startsWith("application/json")) {
    assert(!api, `API responses are JSON envelopes: ${ct} ${r.text}`);
    return;
  }
  assert(r.body, `JSON response must parse: ${r.text.slice(0, 200)}`);
  assertEquals(
    Object.keys(r.body).sort(),
    ["data", "error", "status"],
    "envelope keys",
  );
  assertEquals(r.body.status, r.status, "envelope status equals HTTP status");
  assert(typeof r.body.error === "string", "error is a string");
  if (r.status < 400) assertEquals(r.body.error, "", "error empty on success");
  else assert(r.body.error !== "", "error message present on failure");
  if (r.status === 500) {
    assert(!/at .*\.ts:\d+|SELECT|INSERT/i.test(r.text), "500 leaks internals");
  }
}

/** Snapshot of schemas and records of some entities (admin view). */
export async function snapshot(
  s: TestServer,
  entities: string[],
): Promise<string> {
  const token = await s.adminToken();
  const out: unknown[] = [];
  for (const name of entities) {
    const schema = await s.request("GET", `/api/v1/schemas/${name}`, { token });
    const recs = schema.status === 200 && schema.data.type !== "view"
      ? await s.request("GET", `/api/v1/entities/${name}?limit=500&sort=id`, {
        token,
      })
      : undefined;
    out.push([schema.status, schema.data, recs?.status, recs?.data]);
  }
  return JSON.stringify(out);
}

async function runOne(s: TestServer, sc: Scenario): Promise<void> {
  const v: Vars = {};
  await sc.setup?.(s, v);
  const before = sc.unchanged ? await snapshot(s, sc.unchanged) : "";
  let token: string | undefined;
  if (sc.token === "admin") token = await s.adminToken();
  else if (typeof sc.token === "function") token = sc.token(v);
  else if (sc.token && sc.token !== "none") token = sc.token;
  const url = typeof sc.url === "function" ? sc.url(v) : sc.url;
  const body = typeof sc.body === "function" ? sc.body(v) : sc.body;
  const r = await s.request(sc.method, url, {
    body,
    raw: sc.raw,
    headers: sc.headers,
    token,
  });
  const where = `${sc.method} ${url} -> ${r.status} ${r.text.slice(0, 400)}`;
  assertEquals(r.status, sc.status, `status of ${where}`);
  checkInvariants(r, sc.method, url.startsWith("/api/"));
  for (const c of sc.contains ?? []) {
    assert(r.text.includes(c), `response should contain ${c}: ${where}`);
  }
  for (const c of sc.notContains ?? []) {
    assert(!r.text.includes(c), `response must not contain ${c}: ${where}`);
  }
  await sc.expect?.(r, s, v);
  if (sc.unchanged) {
    assertEquals(await snapshot(s, sc.unchanged), before, "data unchanged");
  }
  await sc.after?.(s, v);
}

/** Registers the scenarios of a group (one Deno.test per database, one step each). */
export function runScenarios(
  group: string,
  scenarios: Scenario[],
  opts: { fresh?: "scenario" | "group"; config?: AppConfig } = {},
): void {
  forEachDb(group, async (t, db) => {
    const shared = opts.fresh === "group"
      ? await startServer(db, opts.config)
      : undefined;
    try {
      for (const sc of scenarios) {
        await t.step(sc.name, async () => {
          const s = shared ??
            await startServer(db, { ...opts.config, ...sc.config });
          try {
            await runOne(s, sc);
          } finally {
            if (!shared) await s.close();
          }
        });
      }
    } finally {
      await shared?.close();
    }
  });
}

/** Creates an entity as admin (201 asserted) and returns its schema. */
export async function createEntity(
  s: TestServer,
  schema: Record<string, unknown>,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: { type: "base", fields: [], ...schema },
  });
  if (r.status !== 201) throw new Error(`create entity: ${r.text}`);
  return r.data;
}

/** Creates a record as admin (201 asserted) and returns it. */
export async function createRecord(
  s: TestServer,
  entity: string,
  body: Record<string, unknown>,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, {
    token: await s.adminToken(),
    body,
  });
  if (r.status !== 201) throw new Error(`create record: ${r.text}`);
  return r.data;
}

/** Rules with every operation in one mode. */
export function allRules(
  mode: "public" | "auth" | "",
): Record<string, unknown> {
  const rule = { mode, expr: "" };
  return { list: rule, get: rule, add: rule, update: rule, delete: rule };
}

/** Options of a forged token. */
export interface TokenOptions {
  sub: string;
  entity: string;
  secret?: string;
  /** Seconds from now (negative: already expired). */
  expIn?: number | null;
  alg?: string;
}

/**
 * Signs a token the way the server does (HS256, `TEST_JWT_SECRET`), or with
 * a wrong secret/alg/expiry. Stands in for a user login until one exists.
 */
export async function signToken(o: TokenOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ entity: o.entity })
    .setProtectedHeader({ alg: o.alg ?? "HS256", typ: "JWT" })
    .setSubject(o.sub)
    .setJti(crypto.randomUUID())
    .setIssuedAt(now - 7200);
  if (o.expIn !== null) jwt.setExpirationTime(now + (o.expIn ?? 3600));
  return await jwt.sign(new TextEncoder().encode(o.secret ?? TEST_JWT_SECRET));
}

/** Creates an auth entity `users` (if needed) and a user; returns a token for it. */
export async function userToken(
  s: TestServer,
  email = "user@example.com",
): Promise<{ id: string; token: string }> {
  const token = await s.adminToken();
  const found = await s.request("GET", "/api/v1/schemas/users", { token });
  if (found.status === 404) {
    await createEntity(s, { name: "users", type: "auth" });
  }
  const user = await createRecord(s, "users", {
    email,
    password: "user-password-1",
  });
  return {
    id: user.id,
    token: await signToken({ sub: user.id, entity: "users" }),
  };
}

/** Admin requests with paths relative to `/api/v1/`. */
export interface AdminApi {
  get(path: string): Promise<Reply>;
  post(path: string, body: unknown): Promise<Reply>;
  patch(path: string, body: unknown): Promise<Reply>;
  del(path: string): Promise<Reply>;
}

/** Request helpers carrying the admin token. */
export async function asAdmin(s: TestServer): Promise<AdminApi> {
  const token = await s.adminToken();
  const call = (method: string) => (path: string, body?: unknown) =>
    s.request(method, `/api/v1/${path}`, { token, body });
  return {
    get: call("GET"),
    post: call("POST"),
    patch: call("PATCH"),
    del: call("DELETE"),
  };
}

/** Runs `fn` once per server (for setups shared by a group of scenarios). */
export function once(
  fn: (s: TestServer) => Promise<void>,
): (s: TestServer) => Promise<void> {
  const done = new WeakMap<TestServer, Promise<void>>();
  return (s) => {
    if (!done.has(s)) done.set(s, fn(s));
    return done.get(s)!;
  };
}

/** Asserts that only the system entity exists (nothing was created). */
export async function onlySystem(s: TestServer): Promise<void> {
  const r = await s.request("GET", "/api/v1/schemas", {
    token: await s.adminToken(),
  });
  const names = r.data.map((e: { name: string }) => e.name);
  assertEquals(names, ["mb_admins"], "nothing created");
}

/** The fields of an entity, as the schemas API returns them. */
export async function fieldsOf(
  s: TestServer,
  entity: string,
): Promise<{ id: string; name: string }[]> {
  const token = await s.adminToken();
  const r = await s.request("GET", `/api/v1/schemas/${entity}`, { token });
  return r.data.fields;
}

/** Id of a field by name. */
export async function fieldId(
  s: TestServer,
  entity: string,
  name: string,
): Promise<string> {
  return (await fieldsOf(s, entity)).find((f) => f.name === name)!.id;
}

/** Field names of an entity. */
export async function fieldNames(
  s: TestServer,
  entity: string,
): Promise<string[]> {
  return (await fieldsOf(s, entity)).map((f) => f.name);
}

/** Values that have broken naive SQL or text handling. */
export const NASTY: readonly string[] = [
  "'; DROP TABLE posts; --",
  '"',
  "\\",
  "🚀 emoji",
  "\u202eRTL\u202c عربى",
  "nul\u0000inside",
  "%00",
  "../../etc/passwd",
];
