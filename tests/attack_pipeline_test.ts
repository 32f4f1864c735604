/**
 * Attacks on the request pipeline after envelopes of the hot routes became
 * `ctx.json` (headers set at once, not stamped afterwards): script middleware
 * that rewrites headers, HEAD, CORS on errors, odd request ids and
 * Authorization values.
 */

import assert from "node:assert/strict";
import { forEachDb, type Reply, startServer } from "./_server.ts";
import { withScripts } from "./_extend_fixtures.ts";
import { createEntity, createRecord } from "./_scenarios.ts";

const OK = "https://ok.example";
const PUBLIC = { mode: "public", expr: "" };
const ENTITY = {
  name: "things",
  fields: [{ name: "title", type: "string" }],
  rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
};

// A script that rewrites the pipeline's own headers on every answer.
const REWRITE = `
export default (app) => {
  app.use(async (_ctx, next) => {
    const res = await next();
    res.headers.set("x-request-id", "spoofed");
    res.headers.set("access-control-allow-origin", "https://evil.example");
    return res;
  });
};
`;

function pipelineHeaders(r: Reply, id: string, where: string): void {
  assert.equal(r.headers.get("x-request-id"), id, `${where}: request id`);
  assert.equal(
    r.headers.get("access-control-allow-origin"),
    OK,
    `${where}: CORS`,
  );
}

forEachDb(
  "attack pipeline: the request id and CORS are the pipeline's on every route, whatever middleware sets",
  async (t, db) => {
    await withScripts(db, { "rewrite.js": REWRITE }, async (s) => {
      await createEntity(s, ENTITY);
      const rec = await createRecord(s, "things", { title: "a" });
      const token = await s.adminToken();
      const routes: [string, string][] = [
        ["GET", "/api/v1/schemas"], // stamped afterwards
        ["GET", "/api/v1/health"], // ctx.json
        ["GET", "/api/v1/entities/things"], // ctx.json
        ["GET", `/api/v1/entities/things/${rec.id}`], // ctx.json
      ];
      for (const [method, path] of routes) {
        await t.step(`${method} ${path}`, async () => {
          const r = await s.request(method, path, {
            token,
            headers: { origin: OK, "x-request-id": "mine-1" },
          });
          assert.equal(r.status, 200, r.text);
          pipelineHeaders(r, "mine-1", path);
        });
      }
    }, { corsOrigins: [OK] });
  },
);

forEachDb(
  "attack pipeline: HEAD, errors and odd headers",
  async (t, db) => {
    const s = await startServer(db, { corsOrigins: [OK] });
    try {
      await createEntity(s, ENTITY);
      const rec = await createRecord(s, "things", { title: "a" });
      for (
        const path of [
          "/api/v1/entities/things",
          `/api/v1/entities/things/${rec.id}`,
          "/api/v1/health",
        ]
      ) {
        await t.step(`HEAD ${path}: no body, the same headers`, async () => {
          const res = await fetch(s.url + path, {
            method: "HEAD",
            headers: { origin: OK, "x-request-id": "head-1" },
          });
          assert.equal(res.status, 200);
          assert.equal(await res.text(), "");
          assert.equal(res.headers.get("x-request-id"), "head-1");
          assert.equal(res.headers.get("access-control-allow-origin"), OK);
          assert.equal(res.headers.get("x-content-type-options"), "nosniff");
        });
      }
      const errors: [string, string, Record<string, string>][] = [
        ["GET", "/api/v1/nope", {}],
        ["GET", "/api/v1/entities/things?filter=(((", {}],
        ["GET", `/api/v1/entities/things/${rec.id}`, {
          authorization: "Bearer x",
        }],
        ["DELETE", "/api/v1/health", {}],
      ];
      for (const [method, path, headers] of errors) {
        await t.step(
          `${method} ${path}: CORS and id on the error`,
          async () => {
            const r = await s.request(method, path, {
              headers: { ...headers, origin: OK, "x-request-id": "err-1" },
            });
            assert.ok(r.status >= 400 && r.status < 500, r.text);
            pipelineHeaders(r, "err-1", path);
            assert.equal(r.body?.status, r.status);
          },
        );
      }
      await t.step("request ids that are not echoed", async () => {
        for (
          const id of ["a b", "x".repeat(65), "é", "a,b", "<script>", "a/b"]
        ) {
          const r = await s.request("GET", "/api/v1/health", {
            headers: { "x-request-id": id },
          });
          const got = r.headers.get("x-request-id") ?? "";
          assert.notEqual(got, id);
          assert.match(got, /^[A-Za-z0-9._-]{1,64}$/);
        }
        // Two headers arrive joined ("a, b"): not an id either.
        const h = new Headers();
        h.append("x-request-id", "a");
        h.append("x-request-id", "b");
        const res = await fetch(s.url + "/api/v1/health", { headers: h });
        await res.body?.cancel();
        assert.match(
          res.headers.get("x-request-id") ?? "",
          /^[A-Za-z0-9._-]+$/,
        );
        assert.notEqual(res.headers.get("x-request-id"), "a");
      });
      await t.step("blank Authorization values", async () => {
        for (const v of [" ", "\t", "  \t "]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/things/${rec.id}`,
            {
              headers: { authorization: v },
            },
          );
          assert.equal(r.status, 200, `${JSON.stringify(v)}: ${r.text}`);
        }
        for (const v of ["Bearer ", "bearer", "Bearer  x", "Token x"]) {
          const r = await s.request(
            "GET",
            `/api/v1/entities/things/${rec.id}`,
            {
              headers: { authorization: v },
            },
          );
          assert.equal(r.status, 401, `${JSON.stringify(v)}: ${r.text}`);
        }
      });
    } finally {
      await s.close();
    }
  },
);
