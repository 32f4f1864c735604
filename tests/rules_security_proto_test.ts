/**
 * Own `__proto__` and `constructor` keys against a custom rule, on both
 * databases: a JSON body or a multipart form whose owner hides under
 * `__proto__` does not satisfy `req.body.owner == auth.id` or
 * `record.owner == auth.id`, nothing is created or changed, and nothing leaks
 * into the prototypes of this process (the server runs in it).
 *
 * @module
 */

import { forEachDb, startServer, type TestServer } from "./_server.ts";
import { eq, status } from "./_checks.ts";
import {
  type Members,
  members,
  noServerErrors,
  schema,
} from "./_rules_security_fixtures.ts";

const OWNED = "record.owner == auth.id";

interface World extends Members {
  /** The victim's claim. */
  victimId: string;
}

/** `users`, a `claims` entity owned per row, and one claim of the victim. */
async function world(s: TestServer): Promise<World> {
  const m = await members(s);
  await schema(s, m.admin, {
    name: "claims",
    type: "base",
    fields: [
      { name: "owner", type: "string" },
      { name: "title", type: "text" },
      { name: "n", type: "double" },
      { name: "data", type: "json" },
    ],
    rules: {
      list: { mode: "custom", expr: OWNED },
      get: { mode: "custom", expr: OWNED },
      add: { mode: "custom", expr: "req.body.owner == auth.id" },
      update: { mode: "custom", expr: OWNED },
      delete: { mode: "custom", expr: OWNED },
    },
  });
  const r = await s.request("POST", "/api/v1/entities/claims", {
    token: m.tVictim,
    body: { owner: m.victim, title: "victim's" },
  });
  status(r, 201, "victim creates a claim");
  return { ...m, victimId: r.data.id };
}

/** The number of claims, as the admin counts them. */
async function count(s: TestServer, admin: string): Promise<number> {
  const l = await s.request(
    "GET",
    "/api/v1/entities/claims?count=true&limit=1",
    {
      token: admin,
    },
  );
  status(l, 200, "count claims");
  return l.data.total as number;
}

/** Fails when a request left keys on Object.prototype. */
function prototypeClean(): void {
  const probe: Record<string, unknown> = {};
  eq(
    [probe.owner, probe.title],
    [undefined, undefined],
    "Object.prototype clean",
  );
}

/** A form of string parts. */
function form(parts: [string, string][]): FormData {
  const f = new FormData();
  for (const [k, v] of parts) f.append(k, v);
  return f;
}

/** A create attempt by mallory: the body it sends, built from the ids. */
interface Attempt {
  name: string;
  body: (w: World) => { raw: BodyInit; headers?: Record<string, string> };
}

const json = (raw: string) => ({
  raw,
  headers: { "content-type": "application/json" },
});

const ATTEMPTS: Attempt[] = [
  {
    name: "JSON: __proto__ holds mallory as owner",
    body: (w) =>
      json(`{"__proto__": {"owner": "${w.mallory}"}, "title": "proto"}`),
  },
  {
    name: "JSON: __proto__ holds the victim as owner",
    body: (w) => json(`{"__proto__": {"owner": "${w.victim}"}}`),
  },
  {
    name: "JSON: __proto__ after a title",
    body: (w) =>
      json(
        `{"title": "x", "__proto__": {"owner": "${w.mallory}", "title": "y"}}`,
      ),
  },
  {
    name: "JSON: constructor.prototype holds the owner",
    body: (w) =>
      json(`{"constructor": {"prototype": {"owner": "${w.mallory}"}}}`),
  },
  {
    name: "multipart @jsonPayload: __proto__ holds the owner",
    body: (w) => ({
      raw: form([["@jsonPayload", `{"__proto__": {"owner": "${w.mallory}"}}`]]),
    }),
  },
  {
    name: "multipart @jsonPayload: __proto__ and a title",
    body: (w) => ({
      raw: form([[
        "@jsonPayload",
        `{"__proto__": {"owner": "${w.mallory}"}, "title": "proto"}`,
      ]]),
    }),
  },
  {
    name: "multipart: a part named __proto__",
    body: (w) => ({
      raw: form([["__proto__", w.mallory], ["title", "proto part"]]),
    }),
  },
];

// The steps share one server and fixture. Only the last step creates a
// record (mallory's own claim), which no other step reads: the others count
// claims before and after themselves and read only the victim's claim.
forEachDb("rules security: __proto__ keys in bodies", async (t, db) => {
  const s = await startServer(db);
  try {
    const w = await world(s);
    const { admin, tMallory, victimId } = w;

    for (const a of ATTEMPTS) {
      await t.step(`create refused: ${a.name}`, async () => {
        const before = await count(s, admin);
        const c = await s.request("POST", "/api/v1/entities/claims", {
          token: tMallory,
          ...a.body(w),
        });
        status(c, [400, 403], a.name);
        eq(await count(s, admin), before, "nothing created");
        prototypeClean();
      });
    }

    await t.step(
      "PATCH of the victim's claim with a __proto__ owner",
      async () => {
        const u = await s.request(
          "PATCH",
          `/api/v1/entities/claims/${victimId}`,
          {
            token: tMallory,
            ...json(
              `{"__proto__": {"owner": "${w.mallory}"}, "title": "pwned"}`,
            ),
          },
        );
        status(u, [400, 404], "PATCH victim's record with a __proto__ owner");
        const g = await s.request(
          "GET",
          `/api/v1/entities/claims/${victimId}`,
          {
            token: admin,
          },
        );
        eq(
          [g.data.owner, g.data.title],
          [w.victim, "victim's"],
          "victim's record unchanged",
        );
        prototypeClean();
      },
    );

    await t.step("the honest multipart create of one's own works", async () => {
      const m = await s.request("POST", "/api/v1/entities/claims", {
        token: tMallory,
        raw: form([["owner", w.mallory], ["title", "mine"]]),
      });
      status(m, 201, "multipart create of one's own");
      eq([m.data.owner, m.data.title], [w.mallory, "mine"], "created");
    });

    await noServerErrors(s, admin);
  } finally {
    await s.close();
  }
});
