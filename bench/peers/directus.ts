/**
 * Directus on SQLite: bootstrapped in a temp dir, an `items` collection with
 * the seeded shape (`n` and `tag` indexed), read and create granted to the
 * public policy, 10 000 records created through its REST API in batches.
 * Logs at `warn` (no line per request) and the pressure limiter off (it
 * answers 503 under saturation, which would count as served requests).
 *
 * @module
 */

import { type Installed, VERSIONS } from "./install.ts";
import { freePort, startNode, stopNode } from "./node_procs.ts";
import {
  call,
  COUNT,
  CREATE_BODY,
  FILTER,
  MIDDLE,
  record,
  type System,
} from "./scenarios.ts";

const ADMIN = { email: "admin@example.com", password: "bench-admin-pass-1" };

function env(dir: string, port: number): Record<string, string> {
  return {
    DB_CLIENT: "sqlite3",
    DB_FILENAME: `${dir}/data.db`,
    KEY: "bench-key",
    SECRET: "bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz",
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    HOST: "127.0.0.1",
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    TELEMETRY: "false",
    LOG_LEVEL: "warn",
    PRESSURE_LIMITER_ENABLED: "false",
    STORAGE_LOCAL_ROOT: `${dir}/uploads`,
    EXTENSIONS_PATH: `${dir}/extensions`,
    NO_COLOR: "1",
  };
}

/** Starts and seeds Directus with its data in `dir`. */
export async function startDirectus(
  peers: Installed,
  dir: string,
): Promise<System> {
  await Deno.mkdir(`${dir}/uploads`, { recursive: true });
  await Deno.mkdir(`${dir}/extensions`, { recursive: true });
  const port = freePort();
  const cli = `${peers.directus}/node_modules/directus/cli.js`;
  const boot = await new Deno.Command(peers.node, {
    args: [cli, "bootstrap"],
    cwd: dir,
    env: env(dir, port),
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!boot.success) {
    throw new Error(
      `Cannot bootstrap Directus: ${new TextDecoder().decode(boot.stderr)}`,
    );
  }
  const proc = await startNode({
    name: "Directus",
    cmd: [peers.node, cli, "start"],
    cwd: dir,
    env: env(dir, port),
    port,
    ready: "/server/ping",
    log: `${dir}/directus.log`,
  });
  try {
    const itemId = await seedDirectus(`http://127.0.0.1:${port}`);
    const filter = JSON.stringify({
      _and: [
        { n: { _gte: FILTER.gte } },
        { n: { _lt: FILTER.lt } },
        { tag: { _eq: FILTER.tag } },
      ],
    });
    return {
      name: "Directus",
      version: VERSIONS.directus,
      database: "SQLite",
      proc,
      targets: {
        "GET by id (public)": { method: "GET", path: `/items/items/${itemId}` },
        "list 50": { method: "GET", path: "/items/items?limit=50" },
        "list filter + sort": {
          method: "GET",
          path: `/items/items?limit=50&sort=-n&filter=${
            encodeURIComponent(filter)
          }`,
        },
        "create": {
          method: "POST",
          path: "/items/items",
          headers: { "content-type": "application/json" },
          body: CREATE_BODY,
        },
      },
      stop: () => stopNode(proc),
    };
  } catch (e) {
    await stopNode(proc);
    throw e;
  }
}

/** Creates the collection, grants public access, seeds; returns the middle id. */
async function seedDirectus(url: string): Promise<string> {
  const json = { "content-type": "application/json" };
  const login = await call(`${url}/auth/login`, {
    method: "POST",
    headers: json,
    body: JSON.stringify(ADMIN),
  }) as { data: { access_token: string } };
  const headers = {
    ...json,
    authorization: `Bearer ${login.data.access_token}`,
  };
  await call(`${url}/collections`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      collection: "items",
      schema: {},
      meta: {},
      fields: [
        {
          field: "id",
          type: "integer",
          meta: { hidden: true },
          schema: { is_primary_key: true, has_auto_increment: true },
        },
        { field: "title", type: "string", schema: { is_nullable: false } },
        { field: "n", type: "integer", schema: { is_indexed: true } },
        { field: "tag", type: "string", schema: { is_indexed: true } },
      ],
    }),
  });
  // The public policy is the one granted to "no role, no user".
  const access = await call(`${url}/access?limit=-1`, { headers }) as {
    data: { role: string | null; user: string | null; policy: string }[];
  };
  const policy = access.data.find((a) => a.role === null && a.user === null)
    ?.policy;
  if (!policy) throw new Error("Cannot find Directus's public policy");
  for (const action of ["read", "create"]) {
    await call(`${url}/permissions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        policy,
        collection: "items",
        action,
        fields: ["*"],
        permissions: {},
        validation: {},
      }),
    });
  }
  let itemId = "";
  const batch = 1000;
  for (let from = 0; from < COUNT; from += batch) {
    const rows = Array.from({ length: batch }, (_, i) => record(from + i));
    const res = await call(`${url}/items/items`, {
      method: "POST",
      headers,
      body: JSON.stringify(rows),
    }) as { data: { id: number; n: number }[] };
    const mid = res.data.find((r) => r.n === MIDDLE);
    if (mid) itemId = String(mid.id);
  }
  if (!itemId) throw new Error("Cannot find the middle record in Directus");
  return itemId;
}
