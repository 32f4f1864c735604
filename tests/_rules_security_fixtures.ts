/**
 * Fixtures of the rules-security suites: an auth entity `users` with two
 * members (mallory, the attacker, and victim), tokens for them, and the
 * server-wide check that no request of a test answered 500.
 *
 * @module
 */

import { ADMIN_PASSWORD_HASH, type TestServer } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";

/** The `users` auth entity and its two members, with their tokens. */
export interface Members {
  admin: string;
  mallory: string;
  victim: string;
  tMallory: string;
  tVictim: string;
}

/** A token issued by the server's session service. */
export async function tokenOf(
  s: TestServer,
  entity: string,
  id: string,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  return (await s.app.sessions.issue(e, (await e.read(id))!)).token;
}

/**
 * Inserts a member of `users` directly. Its password column holds a real
 * scrypt hash (the harness admin's, computed ahead of time), so a rule that
 * probes `password` would see one if it could read it; no test here logs in.
 */
async function member(
  s: TestServer,
  email: string,
  role: string,
): Promise<string> {
  const now = new Date().toISOString();
  const id = crypto.randomUUID();
  await s.app.storage.run(
    `INSERT INTO "users" ("id", "created", "updated", "email", "role", "password", "verified") VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      now,
      now,
      email,
      role,
      ADMIN_PASSWORD_HASH,
      s.app.storage.dialect.encode("bool", false),
    ],
  );
  return id;
}

/** Creates `users` (auth, with a `role`) and its members mallory and victim. */
export async function members(s: TestServer): Promise<Members> {
  const admin = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token: admin,
    body: {
      name: "users",
      type: "auth",
      fields: [{ name: "role", type: "string" }],
    },
  });
  status(r, 201, "users schema");
  const mallory = await member(s, "mallory@example.com", "writer");
  const victim = await member(s, "victim@example.com", "editor");
  return {
    admin,
    mallory,
    victim,
    tMallory: await tokenOf(s, "users", mallory),
    tVictim: await tokenOf(s, "users", victim),
  };
}

/** Creates a schema as the admin (201 expected). */
export async function schema(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  status(r, 201, `${body.name} schema`);
}

/**
 * Run after a test's steps: the request log holds its refused requests
 * (400/403) and no 500, and the server is still healthy.
 */
export async function noServerErrors(
  s: TestServer,
  admin: string,
): Promise<void> {
  await s.app.log.flush(); // request entries are queued before each reply
  const logs = await s.request(
    "GET",
    "/api/v1/sys/logs?type=request&min_level=warn&limit=1000",
    { token: admin },
  );
  status(logs, 200, "request logs");
  const items = logs.data.items as { status: number; path: string }[];
  if (!items.some((x) => x.status === 400 || x.status === 403)) {
    fail("the refused requests of this test are not in the logs");
  }
  const fives = items.filter((x) => x.status >= 500);
  if (fives.length) fail(`500s logged: ${JSON.stringify(fives)}`);
  const h = await s.request("GET", "/api/v1/health");
  status(h, 200, "health");
  eq(h.data.status, "ok", "health status");
}
