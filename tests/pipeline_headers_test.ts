/**
 * The headers every answer carries, on the routes that build their envelope
 * with `Context.json` (health, record list, get, create, update) and on one
 * that still has them added afterwards (schemas): the request id (given or
 * generated), `nosniff`, CORS for an allowed origin, the route's own headers;
 * a guest and a bad token on a record read; the client IP from the last
 * `X-Forwarded-For` hop with `--trustProxy`.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";

const OK = "https://ok.example";
const PUBLIC = { mode: "public", expr: "" };

/** A public `things` entity with one record; returns its id. */
async function things(s: TestServer): Promise<string> {
  const token = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "things",
      type: "base",
      fields: [{ name: "title", type: "string" }],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
    },
  });
  assertStatus(r, 201, "schema");
  const rec = await s.request("POST", "/api/v1/entities/things", {
    body: { title: "one" },
  });
  assertStatus(rec, 201, "record");
  return rec.data.id;
}

/** The headers each of these answers must carry. */
function stamped(r: Reply, where: string, requestId?: string): void {
  const id = r.headers.get("x-request-id") ?? "";
  if (requestId) assertEquals(id, requestId, `${where}: request id echoed`);
  else assert(/^[A-Za-z0-9._-]{1,64}$/.test(id), `${where}: id ${id}`);
  assertEquals(
    r.headers.get("x-content-type-options"),
    "nosniff",
    `${where}: nosniff`,
  );
  assert(
    (r.headers.get("content-type") ?? "").startsWith("application/json"),
    `${where}: JSON`,
  );
}

function corsEchoed(r: Reply, where: string): void {
  assertEquals(r.headers.get("access-control-allow-origin"), OK, where);
  assert(
    (r.headers.get("access-control-expose-headers") ?? "").includes(
      "X-Request-Id",
    ),
    `${where}: exposes X-Request-Id`,
  );
  assert(r.headers.get("vary")?.includes("Origin"), `${where}: Vary`);
}

forEachDb(
  "pipeline: request id, nosniff and CORS on every route",
  async (t, db) => {
    const s = await startServer(db, { corsOrigins: [OK] });
    try {
      const id = await things(s);
      const token = await s.adminToken();
      const calls: [string, string, number, object][] = [
        ["GET", "/api/v1/health", 200, {}],
        ["GET", "/api/v1/entities/things", 200, {}],
        ["GET", `/api/v1/entities/things/${id}`, 200, {}],
        ["POST", "/api/v1/entities/things", 201, { body: { title: "two" } }],
        ["PATCH", `/api/v1/entities/things/${id}`, 200, {
          body: { title: "x" },
        }],
        ["GET", "/api/v1/schemas", 200, { token }],
        ["GET", "/api/v1/entities/things/nope", 404, {}],
      ];
      for (const [method, path, status, call] of calls) {
        await t.step(`${method} ${path}`, async () => {
          const plain = await s.request(method, path, call);
          assertStatus(plain, status, path);
          stamped(plain, `${path} plain`);
          assertEquals(plain.headers.get("access-control-allow-origin"), null);
          const given = await s.request(method, path, {
            ...call,
            headers: { origin: OK, "x-request-id": "given.id-1" },
          });
          assertStatus(given, status, path);
          stamped(given, `${path} given`, "given.id-1");
          corsEchoed(given, path);
          const other = await s.request(method, path, {
            ...call,
            headers: {
              origin: "https://evil.example",
              "x-request-id": "bad id!",
            },
          });
          stamped(other, `${path} other`);
          assert(other.headers.get("x-request-id") !== "bad id!", "unsafe id");
          assertEquals(other.headers.get("access-control-allow-origin"), null);
        });
      }
      await t.step("health keeps its own cache-control", async () => {
        const r = await s.request("GET", "/api/v1/health", {
          headers: { origin: OK },
        });
        assertEquals(r.headers.get("cache-control"), "no-store");
        corsEchoed(r, "health");
      });
    } finally {
      await s.close();
    }
  },
);

forEachDb("pipeline: guests and bad tokens on a record read", async (t, db) => {
  const s = await startServer(db);
  try {
    const id = await things(s);
    const path = `/api/v1/entities/things/${id}`;
    await t.step("no Authorization: a guest", async () => {
      assertStatus(await s.request("GET", path), 200);
    });
    await t.step("an empty Authorization: a guest", async () => {
      const r = await s.request("GET", path, {
        headers: { authorization: "" },
      });
      assertStatus(r, 200);
    });
    for (const bad of ["Bearer", "Bearer nope", "Basic abc", "Bearer a.b.c"]) {
      await t.step(`Authorization ${JSON.stringify(bad)}: 401`, async () => {
        const r = await s.request("GET", path, {
          headers: { authorization: bad },
        });
        assertStatus(r, 401);
        stamped(r, bad);
      });
    }
  } finally {
    await s.close();
  }
});

forEachDb(
  "pipeline: the client IP is the last X-Forwarded-For hop",
  async (t, db) => {
    // The sign-up throttle counts per client IP: three hops lists that end
    // in the same address share one budget; another last hop has its own.
    const s = await startServer(db, { trustProxy: true });
    try {
      const token = await s.adminToken();
      const r = await s.request("POST", "/api/v1/schemas", {
        token,
        body: {
          name: "members",
          type: "auth",
          fields: [],
          rules: { add: PUBLIC },
        },
      });
      assertStatus(r, 201, "auth entity");
      const signUp = (xff: string, n: number) =>
        s.request("POST", "/api/v1/entities/members", {
          headers: { "x-forwarded-for": xff },
          body: {
            email: `m${n}-${crypto.randomUUID()}@x.example`,
            password: "password-123",
          },
        });
      let limited: Reply | undefined;
      const lists = [
        "1.1.1.1, 10.0.0.9",
        "2.2.2.2,10.0.0.9",
        "10.0.0.9 , ",
        "x,,10.0.0.9",
      ];
      for (let i = 0; i < 40 && !limited; i++) {
        const reply = await signUp(lists[i % lists.length], i);
        if (reply.status === 429) limited = reply;
        else assertStatus(reply, 201, `sign-up ${i}`);
      }
      await t.step("one last hop, one budget", () => {
        assert(limited, "the shared last hop was throttled");
      });
      await t.step("another last hop is not throttled", async () => {
        assertStatus(await signUp("10.0.0.9, 10.0.0.10", 99), 201);
      });
    } finally {
      await s.close();
    }
  },
);
