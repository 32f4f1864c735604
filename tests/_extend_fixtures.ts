/**
 * Fixtures of the extension suites (`tests/extend_*_test.ts`): a server
 * whose `--scriptsDir` holds scripts the test wrote, a start-up that must
 * fail, entities and users made through the API, and the system log lines
 * a script wrote.
 *
 * @module
 */

import { join } from "node:path";
import type { AppConfig } from "../lib/config.ts";
import type { AuthValue } from "../lib/caller.ts";
import {
  assertStatus,
  seedUser,
  startServer,
  type TestServer,
} from "./_server.ts";

/** A test server started with a scripts directory. */
export interface ScriptServer extends TestServer {
  scriptsDir: string;
}

/** Writes `scripts` (file name → source) into a new temp directory. */
export async function scriptsDirOf(
  scripts: Record<string, string>,
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "mb_ext_" });
  for (const [name, src] of Object.entries(scripts)) {
    await Deno.writeTextFile(join(dir, name), src);
  }
  return dir;
}

/**
 * Runs `fn` against a server whose scripts directory holds `scripts`;
 * stops the server and removes the directory afterwards.
 */
export async function withScripts(
  db: "sqlite" | "postgres",
  scripts: Record<string, string>,
  fn: (s: ScriptServer) => Promise<void>,
  config: AppConfig = {},
): Promise<void> {
  const dir = await scriptsDirOf(scripts);
  try {
    const s = await startServer(db, { ...config, scriptsDir: dir });
    try {
      await fn({ ...s, scriptsDir: dir });
    } finally {
      await s.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The message a start-up with `scripts` fails with (throws if it starts). */
export async function startupError(
  db: "sqlite" | "postgres",
  scripts: Record<string, string>,
): Promise<string> {
  const dir = await scriptsDirOf(scripts);
  try {
    const s = await startServer(db, { scriptsDir: dir }).catch((err) => err);
    if (!(s instanceof Error)) {
      await s.close();
      throw new Error("the server started; it should have refused to");
    }
    return s.message;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const PUBLIC = { mode: "public", expr: "" };

/** Every rule public (tests that are not about rules). */
export const OPEN = {
  list: PUBLIC,
  get: PUBLIC,
  add: PUBLIC,
  update: PUBLIC,
  delete: PUBLIC,
};

/** Creates an entity through the schemas API. */
export async function makeEntity(
  s: TestServer,
  schema: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: { type: "base", fields: [], rules: OPEN, ...schema },
  });
  assertStatus(r, 201, `create entity ${schema.name}`);
}

/** A user of `entity` (an auth entity), its token and its caller value. */
export async function userOf(
  s: TestServer,
  entity: string,
  email: string,
): Promise<{ id: string; token: string; auth: AuthValue }> {
  const user = await seedUser(s, entity, { email }, "password-123");
  const users = s.app.schemas.get(entity)!;
  const { token } = await s.app.sessions.issue(users, user);
  const auth = await s.app.sessions.resolve(`Bearer ${token}`);
  return { id: user.id, token, auth };
}

/** A log entry as `GET /api/v1/sys/logs` returns it. */
export interface LogEntry {
  level: string;
  type: string;
  message: string;
  data: Record<string, unknown> | null;
}

/** The system log entries whose message contains `search`, newest first. */
export async function logsOf(
  s: TestServer,
  search: string,
): Promise<LogEntry[]> {
  await s.app.log.flush();
  const r = await s.request(
    "GET",
    `/api/v1/sys/logs?type=app&limit=100&search=${encodeURIComponent(search)}`,
    { token: await s.adminToken() },
  );
  assertStatus(r, 200, "read the logs");
  return r.data.items as LogEntry[];
}

/** Row count of an entity, read with SQL (no rule, no hook). */
export async function rowCount(s: TestServer, entity: string): Promise<number> {
  const rows = await s.app.storage.query(
    `SELECT COUNT(*) AS n FROM "${entity}"`,
  );
  return Number(rows[0].n);
}
