/**
 * What the API pages make of the OpenAPI document: types and constraints in
 * words, a create's sample body, and the sample calls (curl quoting).
 */
import assert from "node:assert/strict";
import { Moonbase } from "../../../client/mod.ts";
import {
  constraintText,
  type Endpoint,
  sampleBody,
  samplesOf,
  typeText,
} from "./openapi_doc.ts";

Deno.test("typeText and constraintText read the document's schemas", () => {
  assert.equal(typeText({ type: ["string", "null"] }), "string | null");
  assert.equal(
    typeText({ type: ["string", "null"], enum: ["a", null] }),
    '"a" | null',
  );
  assert.equal(
    typeText({ type: "array", items: { $ref: "#/components/schemas/Users" } }),
    "Users[]",
  );
  assert.equal(
    constraintText({ minLength: 1, maxLength: 9, pattern: "^a" }),
    "1–9 chars, pattern ^a",
  );
  assert.equal(constraintText({ maximum: 5 }), "≤ 5");
});

Deno.test("sample calls: a create sends the required fields", () => {
  const body = sampleBody({
    properties: {
      title: { type: "string" },
      score: { type: ["integer", "null"], minimum: 2 },
      status: { type: "string", enum: ["draft", "done"] },
      author: { type: "string", "x-moonbase-relation": "users" },
    },
    required: ["title", "status", "author"],
  });
  assert.deepEqual(body, {
    title: "title",
    status: "draft",
    author: "<users id>",
  });
  const e: Endpoint = {
    method: "post",
    path: "/api/v1/entities/posts",
    op: {},
  };
  const s = samplesOf(e, "posts", "http://h", { title: "it's" });
  assert.equal(
    s.curl,
    `curl -X POST 'http://h/api/v1/entities/posts' -H "Authorization: Bearer $TOKEN" \\\n  -H "Content-Type: application/json" \\\n  -d '{"title":"it'\\''s"}'`,
  );
  assert.equal(
    s.client,
    'const record = await mb.entity("posts").create({\n  "title": "it\'s"\n});',
  );
});

Deno.test("api docs: every client sample calls a method the client has", () => {
  const mb = new Moonbase("http://h");
  const records = mb.entity("posts") as unknown as Record<string, unknown>;
  const cases: [string, string][] = [
    ["get", "/api/v1/entities/posts"],
    ["get", "/api/v1/entities/posts/{id}"],
    ["post", "/api/v1/entities/posts"],
    ["patch", "/api/v1/entities/posts/{id}"],
    ["delete", "/api/v1/entities/posts/{id}"],
  ];
  const called = cases.map(([method, path]) => {
    const s = samplesOf({ method, path, op: {} }, "posts", "http://h", {});
    const m = /mb\.entity\("posts"\)\.(\w+)\(/.exec(s.client);
    assert.ok(m, s.client);
    assert.equal(typeof records[m[1]], "function", `${m[1]} of the client`);
    return m[1];
  });
  assert.deepEqual(called, ["list", "get", "create", "update", "delete"]);
  mb.close();
});
