/**
 * Parse Server on PostgreSQL (its postgres adapter; MongoDB is not to be had
 * here), started by its CLI in a temp dir: an `items` class of the seeded
 * shape with indexes on `n` and `tag`, public find/get/create through its
 * class-level permissions, 10 000 records created one by one through its REST
 * API (its `/batch` answers 500 in 9.10: `PromiseRouter.match` reads
 * `layer.params` of undefined), logs at `error`.
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
  pool,
  record,
  type System,
} from "./scenarios.ts";

const APP_ID = "bench";
const MASTER_KEY = "bench-master-key-0123456789";

/** Starts and seeds Parse Server on the PostgreSQL database at `dbUrl`. */
export async function startParse(
  peers: Installed,
  dir: string,
  dbUrl: string,
): Promise<System> {
  const port = freePort();
  const mount = `http://127.0.0.1:${port}/parse`;
  const proc = await startNode({
    name: "Parse Server",
    cmd: [
      peers.node,
      `${peers.parse}/node_modules/parse-server/bin/parse-server`,
      "--appId",
      APP_ID,
      "--masterKey",
      MASTER_KEY,
      "--masterKeyIps",
      "127.0.0.1",
      "--databaseURI",
      dbUrl,
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--mountPath",
      "/parse",
      "--serverURL",
      mount,
      "--logLevel",
      "error",
    ],
    cwd: dir,
    env: { NODE_ENV: "production" },
    port,
    ready: "/parse/health",
    log: `${dir}/parse.log`,
  });
  try {
    const itemId = await seedParse(mount);
    const app = { "x-parse-application-id": APP_ID };
    const where = JSON.stringify({
      n: { $gte: FILTER.gte, $lt: FILTER.lt },
      tag: FILTER.tag,
    });
    return {
      name: "Parse Server",
      version: VERSIONS.parse,
      database: "PostgreSQL",
      proc,
      targets: {
        "GET by id (public)": {
          method: "GET",
          path: `/parse/classes/items/${itemId}`,
          headers: app,
        },
        "list 50": {
          method: "GET",
          path: "/parse/classes/items?limit=50",
          headers: app,
        },
        "list filter + sort": {
          method: "GET",
          path: `/parse/classes/items?limit=50&order=-n&where=${
            encodeURIComponent(where)
          }`,
          headers: app,
        },
        "create": {
          method: "POST",
          path: "/parse/classes/items",
          headers: { ...app, "content-type": "application/json" },
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

/** Creates the class and the records; returns the middle record's id. */
async function seedParse(mount: string): Promise<string> {
  const headers = {
    "x-parse-application-id": APP_ID,
    "content-type": "application/json",
  };
  const all = { "*": true };
  await call(`${mount}/schemas/items`, {
    method: "POST",
    headers: { ...headers, "x-parse-master-key": MASTER_KEY },
    body: JSON.stringify({
      className: "items",
      fields: {
        title: { type: "String", required: true },
        n: { type: "Number" },
        tag: { type: "String" },
      },
      indexes: { n_1: { n: 1 }, tag_1: { tag: 1 } },
      classLevelPermissions: {
        find: all,
        get: all,
        count: all,
        create: all,
        update: all,
        delete: {},
        addField: {},
        protectedFields: { "*": [] },
      },
    }),
  });
  let itemId = "";
  const ids = Array.from({ length: COUNT }, (_, i) => i);
  await pool(ids, 16, async (i) => {
    const res = await call(`${mount}/classes/items`, {
      method: "POST",
      headers,
      body: JSON.stringify(record(i)),
    }) as { objectId: string };
    if (i === MIDDLE) itemId = res.objectId;
  });
  if (!itemId) throw new Error("Cannot find the middle record in Parse");
  return itemId;
}
