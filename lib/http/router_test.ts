import { deepStrictEqual as assertEquals } from "node:assert/strict";
import assert from "node:assert/strict";
import { type Match, Router } from "./router.ts";

function found(m: Match<string>): { handler: string; params: object } {
  if (m.kind !== "found") {
    throw new Error(`expected a match, got ${JSON.stringify(m)}`);
  }
  return { handler: m.handler, params: m.params };
}

Deno.test("router: static segments win over :params", () => {
  const r = new Router<string>()
    .add("GET", "/api/v1/entities/:entity/:id", "record")
    .add("GET", "/api/v1/entities/:entity", "list")
    .add("GET", "/api/v1/entities/posts/special", "special");
  assertEquals(found(r.match("GET", "/api/v1/entities/posts/special")), {
    handler: "special",
    params: {},
  });
  assertEquals(found(r.match("GET", "/api/v1/entities/posts/42")), {
    handler: "record",
    params: { entity: "posts", id: "42" },
  });
  assertEquals(found(r.match("GET", "/api/v1/entities/posts")), {
    handler: "list",
    params: { entity: "posts" },
  });
});

Deno.test("router: registration order does not change precedence", () => {
  const r = new Router<string>()
    .add("GET", "/a/new", "static")
    .add("GET", "/a/:id", "param");
  const s = new Router<string>()
    .add("GET", "/a/:id", "param")
    .add("GET", "/a/new", "static");
  for (const router of [r, s]) {
    assertEquals(found(router.match("GET", "/a/new")).handler, "static");
    assertEquals(found(router.match("GET", "/a/old")), {
      handler: "param",
      params: { id: "old" },
    });
  }
});

Deno.test("router: a static dead end falls back to the :param branch", () => {
  const r = new Router<string>()
    .add("GET", "/files/special/meta", "meta")
    .add("GET", "/files/:name/raw", "raw");
  assertEquals(found(r.match("GET", "/files/special/raw")), {
    handler: "raw",
    params: { name: "special" },
  });
  assertEquals(found(r.match("GET", "/files/special/meta")).handler, "meta");
  // No leftover params from an abandoned branch.
  assertEquals(found(r.match("GET", "/files/x/raw")).params, { name: "x" });
});

Deno.test("router: trailing and doubled slashes, root", () => {
  const r = new Router<string>().add("GET", "/", "root").add(
    "GET",
    "/a/b",
    "ab",
  );
  assertEquals(found(r.match("GET", "/")).handler, "root");
  assertEquals(found(r.match("GET", "/a/b/")).handler, "ab");
  assertEquals(r.match("GET", "/a").kind, "not_found");
  assertEquals(r.match("GET", "/a/b/c").kind, "not_found");
});

Deno.test("router: 404 vs 405 with a sorted Allow list incl. HEAD", () => {
  const r = new Router<string>()
    .add("GET", "/api/v1/entities/:entity", "list")
    .add("POST", "/api/v1/entities/:entity", "create")
    .add("PATCH", "/api/v1/entities/:entity/:id", "update")
    .add("DELETE", "/api/v1/entities/:entity/:id", "delete")
    .add("GET", "/api/v1/entities/:entity/:id", "get")
    .add("POST", "/api/v1/auth/:entity/login", "login");
  assertEquals(r.match("PUT", "/api/v1/entities/posts"), {
    kind: "method_not_allowed",
    allow: ["GET", "HEAD", "POST"],
  });
  assertEquals(r.match("POST", "/api/v1/entities/posts/1"), {
    kind: "method_not_allowed",
    allow: ["DELETE", "GET", "HEAD", "PATCH"],
  });
  // No GET: no HEAD either.
  assertEquals(r.match("GET", "/api/v1/auth/users/login"), {
    kind: "method_not_allowed",
    allow: ["POST"],
  });
  assertEquals(r.match("GET", "/api/v1/nothing"), { kind: "not_found" });
  assertEquals(r.match("GET", "/api/v1/entities/posts/1/extra"), {
    kind: "not_found",
  });
  // An intermediate node without handlers is a 404, not a 405.
  assertEquals(r.match("GET", "/api/v1/auth/users"), { kind: "not_found" });
});

Deno.test("router: HEAD falls back to GET; an explicit HEAD wins", () => {
  const r = new Router<string>()
    .add("GET", "/x", "get-x")
    .add("GET", "/y", "get-y")
    .add("HEAD", "/y", "head-y");
  assertEquals(found(r.match("HEAD", "/x")).handler, "get-x");
  assertEquals(found(r.match("HEAD", "/y")).handler, "head-y");
  assertEquals(r.match("POST", "/y"), {
    kind: "method_not_allowed",
    allow: ["GET", "HEAD"],
  });
});

Deno.test("router: methods are case-normalized on add; later add replaces", () => {
  const r = new Router<string>().add("get", "/x", "one").add(
    "GET",
    "/x",
    "two",
  );
  assertEquals(found(r.match("GET", "/x")).handler, "two");
});

Deno.test("router: params are percent-decoded", () => {
  const r = new Router<string>().add("GET", "/api/files/:entity/:name", "f");
  assertEquals(found(r.match("GET", "/api/files/docs/hello%20world.txt")), {
    handler: "f",
    params: { entity: "docs", name: "hello world.txt" },
  });
  assertEquals(
    found(r.match("GET", "/api/files/docs/a%2Fb")).params,
    { entity: "docs", name: "a/b" },
  );
  assertEquals(
    found(r.match("GET", "/api/files/docs/%C3%A9t%C3%A9%F0%9F%8C%99")).params,
    { entity: "docs", name: "été🌙" },
  );
  // "+" is not a space in a path.
  assertEquals(
    found(r.match("GET", "/api/files/docs/a+b")).params,
    { entity: "docs", name: "a+b" },
  );
});

Deno.test("router: malformed percent-encoding does not match", () => {
  const r = new Router<string>().add("GET", "/api/files/:entity/:name", "f");
  for (
    const bad of [
      "/api/files/docs/%",
      "/api/files/docs/%zz",
      "/api/files/docs/%E0%A4%A",
      "/api/files/docs/%C3",
      "/api/files/%FF/x",
    ]
  ) {
    assertEquals(r.match("GET", bad), { kind: "not_found" }, bad);
  }
});

Deno.test("router: clashing parameter names are refused", () => {
  const r = new Router<string>().add("GET", "/a/:id", "x");
  let threw = false;
  try {
    r.add("GET", "/a/:name/b", "y");
  } catch {
    threw = true;
  }
  assertEquals(threw, true);
});

Deno.test("router: a trailing * matches the rest of the path", () => {
  const r = new Router<string>();
  r.add("GET", "/mb", "root");
  r.add("GET", "/mb/assets/:name", "asset");
  r.add("GET", "/mb/*", "app");
  const deep = r.match("GET", "/mb/entities/posts/records/1");
  assert.ok(deep.kind === "found" && deep.handler === "app");
  assert.equal(deep.params["*"], "entities/posts/records/1");
  const a = r.match("GET", "/mb/assets/app.js");
  assert.ok(a.kind === "found" && a.handler === "asset");
  const root = r.match("GET", "/mb");
  assert.ok(root.kind === "found" && root.handler === "root");
  assert.throws(() => r.add("GET", "/x/*/y", "bad"));
});

Deno.test("router: routes() lists every method and pattern", () => {
  const r = new Router<string>();
  r.add("GET", "/a/:id", "x").add("POST", "/a", "y").add("GET", "/mb/*", "z");
  assert.deepEqual([...r.routes()].sort(), [
    ["GET", "/a/:id"],
    ["GET", "/mb/*"],
    ["POST", "/a"],
  ]);
});
