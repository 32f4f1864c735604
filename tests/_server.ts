/**
 * Test harness: a real Moonbase server on an ephemeral port, on SQLite (a
 * temp dataDir) or on a fresh database of the throwaway PostgreSQL cluster.
 *
 * @module
 */

import nodeAssert from "node:assert/strict";
import { createApp } from "../mod.ts";
import { type InternalApp, internalApp } from "../lib/internal_app.ts";
import type { AppConfig } from "../lib/config.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { hashPassword } from "../lib/auth/password.ts";
import { uuidv7 } from "../lib/ids.ts";
import { columnOf, tableOf } from "../lib/schema/ddl.ts";
import type { SqlValue } from "../lib/db/storage.ts";

/** The databases every suite runs on (MB_TEST_DB=sqlite|postgres narrows it). */
export const DATABASES: readonly ("sqlite" | "postgres")[] = (() => {
  const only = Deno.env.get("MB_TEST_DB");
  const all = ["sqlite", "postgres"] as const;
  return all.filter((d) =>
    (!only || only === d) && (d === "sqlite" || hasPostgres())
  );
})();

/** A parsed envelope response. */
export interface Reply {
  status: number;
  headers: Headers;
  body: { status: number; data: unknown; error: string } | null;
  text: string;
  // deno-lint-ignore no-explicit-any
  data: any;
  error: string;
}

/** Options of one request. */
export interface Call {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  raw?: BodyInit;
}

/** A running test server. */
export interface TestServer {
  url: string;
  /**
   * The app with its internals (`internalApp` of lib/internal_app.ts): tests
   * reach the storage, the registry and the services directly.
   */
  app: InternalApp;
  db: "sqlite" | "postgres";
  dataDir: string;
  connection?: string;
  /** Password used for the admin this harness creates. */
  adminPassword: string;
  request(method: string, path: string, call?: Call): Promise<Reply>;
  /** A token of an admin (created once). */
  adminToken(): Promise<string>;
  close(): Promise<void>;
}

/**
 * The harness admin's password hash, computed once ahead of time: every test
 * file runs in an isolate of its own, and an scrypt hash costs ~0.3-0.7 s.
 * `tests/harness_test.ts` checks it still verifies.
 */
export const ADMIN_PASSWORD_HASH =
  "scrypt$32768$8$1$bESafKrznuAmfoEefpMC5Q==$xPB0V1+rqjZyAWaDdqqglB8J0D9In9TE40vaENXaays=";

/** Password of the admin `adminToken()` creates. */
export const ADMIN_PASSWORD = "admin-password-123";

/** Secret used by the harness (tests may check it never leaks). */
export const TEST_JWT_SECRET = "test-secret-0123456789-abcdefghijklmnop";

/**
 * One request to the server at `base` (`http://host:port`), its envelope
 * parsed: a JSON `body` is sent as JSON, `raw` as it is, `token` as a bearer.
 */
export async function requestAt(
  base: string,
  method: string,
  path: string,
  call: Call = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...call.headers };
  let body: BodyInit | undefined = call.raw;
  if (call.body !== undefined) {
    body = typeof call.body === "string"
      ? call.body
      : JSON.stringify(call.body);
    headers["content-type"] ??= "application/json";
  }
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: Reply["body"] = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch { /* not JSON */ }
  return {
    status: res.status,
    headers: res.headers,
    body: parsed,
    text,
    data: parsed?.data,
    error: parsed?.error ?? "",
  };
}

/** Starts a server for a database, with optional config overrides. */
export async function startServer(
  db: "sqlite" | "postgres",
  config: AppConfig = {},
): Promise<TestServer> {
  const dataDir = config.dataDir ??
    await Deno.makeTempDir({ prefix: "mb_test_" });
  let connection = config.connection;
  if (db === "postgres" && !connection) {
    connection = await (await startPostgres()).createDatabase();
  }
  const app = internalApp(
    await createApp({
      quiet: true,
      jwtSecret: TEST_JWT_SECRET,
      // A test never reads or writes the checkout's ./migrations (`dev`
      // writes a migration file for every schema change).
      migrationsDir: `${dataDir}/mb_test_no_migrations`,
      ...config,
      dataDir,
      ...(db === "postgres" ? { database: "PSQL", connection } : {}),
    }),
  );
  const ac = new AbortController();
  const server = await app.serve({
    port: 0,
    hostname: "127.0.0.1",
    signal: ac.signal,
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  let admin: Promise<string> | undefined;
  const adminPassword = ADMIN_PASSWORD;
  const request = (method: string, path: string, call: Call = {}) =>
    requestAt(url, method, path, call);
  return {
    url,
    app,
    db,
    dataDir,
    connection,
    adminPassword,
    request,
    adminToken() {
      // Speed: the admin row is written with a hash computed once per test
      // process, and its token is issued directly (the login route itself is
      // covered by the auth tests).
      admin ??= (async () => {
        const email = "admin@example.com";
        const admins = app.schemas.get("mb_admins")!;
        let user = await admins.queryFromCols(email, ["email"]);
        if (!user) {
          const now = new Date().toISOString();
          const id = crypto.randomUUID();
          await app.storage.run(
            `INSERT INTO "mb_admins" ("id", "created", "updated", "email", "password", "verified") VALUES (?, ?, ?, ?, ?, ?)`,
            [
              id,
              now,
              now,
              email,
              ADMIN_PASSWORD_HASH,
              app.storage.dialect.encode("bool", false),
            ],
          );
          user = await admins.read(id);
          app.setupToken = undefined;
        }
        return (await app.sessions.issue(admins, user!)).token;
      })();
      return admin;
    },
    async close() {
      ac.abort();
      await server.finished;
      await app.close();
      if (!config.dataDir) {
        await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      }
    },
  };
}

/**
 * Whether `forEachDb` suites run with Deno's op and resource sanitizers: on
 * unless `MB_TEST_SANITIZE=0` (to debug a suite without them).
 */
const SANITIZE = Deno.env.get("MB_TEST_SANITIZE") !== "0";

/** Options of a suite run on every database. */
export interface DbSuiteOptions {
  /**
   * Why this suite runs without Deno's op and resource sanitizers (which
   * fail a test that leaves a timer, a request or a connection behind).
   * Giving a reason is the only way to turn them off: a concrete one (what
   * stays open, and why it cannot be closed).
   */
  unsanitized?: string;
}

/**
 * Registers one `Deno.test` per database for a suite body, with the op and
 * resource sanitizers on unless `options.unsanitized` says why not (or
 * `MB_TEST_SANITIZE=0` turns them off for a debugging run).
 *
 * @example
 * ```ts ignore
 * forEachDb("records", async (t, db) => { const s = await startServer(db); ... });
 * ```
 */
export function forEachDb(
  name: string,
  fn: (t: Deno.TestContext, db: "sqlite" | "postgres") => Promise<void>,
  options: DbSuiteOptions = {},
): void {
  const sanitize = SANITIZE && options.unsanitized === undefined;
  for (const db of DATABASES) {
    Deno.test({
      name: `${name} [${db}]`,
      sanitizeOps: sanitize,
      sanitizeResources: sanitize,
      fn: (t) => fn(t, db),
    });
  }
}

/**
 * Asserts deep strict equality (`node:assert`'s rules: key order does not
 * matter, `undefined` and `NaN` do).
 */
export function assertEquals(
  actual: unknown,
  expected: unknown,
  msg = "",
): void {
  nodeAssert.deepStrictEqual(actual, expected, msg || undefined);
}

/** Asserts a condition. */
export function assert(cond: unknown, msg = "assertion failed"): asserts cond {
  if (!cond) throw new Error(msg);
}

/** Asserts a reply's status, with the body in the message. */
export function assertStatus(r: Reply, status: number, msg = ""): void {
  if (r.status !== status) {
    throw new Error(
      `${msg ? msg + ": " : ""}expected status ${status}, got ${r.status}: ${
        r.text.slice(0, 500)
      }`,
    );
  }
  if (r.body && r.body.status !== r.status) {
    throw new Error(`envelope status ${r.body.status} != ${r.status}`);
  }
}

const userHashes = new Map<string, Promise<string>>();

/**
 * Inserts a user of an auth entity directly, with a password hash computed
 * once per password and process (scrypt costs ~0.2-0.5 s per hash), and
 * returns the stored record. Signup and login themselves are covered by the
 * auth tests through the real routes.
 */
export async function seedUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
  password: string,
): Promise<Record<string, unknown> & { id: string }> {
  let hash = userHashes.get(password);
  if (!hash) userHashes.set(password, hash = hashPassword(password));
  const now = new Date().toISOString();
  const row: Record<string, string | number | boolean> = {
    id: uuidv7(),
    created: now,
    updated: now,
    ...values,
    password: await hash,
    verified: s.app.storage.dialect.encode("bool", false) as number | boolean,
  };
  const cols = Object.keys(row);
  await s.app.storage.run(
    `INSERT INTO ${tableOf(entity)} (${
      cols.map((c) => columnOf(c)).join(", ")
    }) VALUES (${cols.map(() => "?").join(", ")})`,
    Object.values(row),
  );
  const rec = await s.app.schemas.get(entity)!.read(String(row.id));
  return rec as Record<string, unknown> & { id: string };
}

/** A SQL expression per dialect; `i` is the row number of the series. */
export type SeriesExpr = string | { sqlite: string; postgres: string };

/** `'<prefix>'` followed by `i` zero-padded to `width` digits. */
export function padded(prefix: string, width: number): SeriesExpr {
  return {
    sqlite: `printf('${prefix}%0${width}d', i)`,
    postgres: `'${prefix}' || lpad(i::text, ${width}, '0')`,
  };
}

/**
 * Inserts `count` rows in one statement (a recursive CTE on SQLite,
 * `generate_series` on PostgreSQL), `i` running from `from`; `created` and
 * `updated` default to now. Values go in `params` as `?` placeholders.
 */
export async function insertSeries(
  s: TestServer,
  entity: string,
  count: number,
  columns: Record<string, SeriesExpr>,
  params: SqlValue[] = [],
  from = 1,
): Promise<void> {
  const now = new Date().toISOString();
  const cols: Record<string, SeriesExpr> = {
    created: `'${now}'`,
    updated: `'${now}'`,
    ...columns,
  };
  const names = Object.keys(cols).map((c) => columnOf(c)).join(", ");
  const exprs = Object.values(cols).map((e) =>
    typeof e === "string" ? e : e[s.db]
  ).join(", ");
  const last = from + count - 1;
  await s.app.storage.run(
    s.db === "postgres"
      ? `INSERT INTO ${
        tableOf(entity)
      } (${names}) SELECT ${exprs} FROM generate_series(${from}, ${last}) AS g(i)`
      : `WITH RECURSIVE c(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM c WHERE i < ${last}) INSERT INTO ${
        tableOf(entity)
      } (${names}) SELECT ${exprs} FROM c`,
    params,
  );
}
