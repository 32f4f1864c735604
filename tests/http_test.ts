import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import {
  checkInvariants,
  createEntity,
  onlySystem,
  runScenarios,
  sc,
  type Scenario,
  signToken,
  userToken,
  type Vars,
} from "./_scenarios.ts";

const MiB = 1024 * 1024;
const json = { "content-type": "application/json" };
const rawPost = (
  name: string,
  raw: BodyInit,
  status: number,
  headers: Record<string, string> = json,
) =>
  sc(name, "POST", "/api/v1/schemas", status, {
    token: "admin",
    raw,
    headers,
    after: status === 201 ? undefined : onlySystem,
  });
const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
const allowOf = (want: string[]) => (r: Reply) => {
  const allow = (r.headers.get("allow") ?? "").split(",").map((x) => x.trim());
  assertEquals(allow.sort(), want.sort(), "Allow header");
};
const isJson = (r: Reply) =>
  assert(r.headers.get("content-type")?.startsWith("application/json"), "JSON");
const header = (name: string, want: string | null) => (r: Reply) =>
  assertEquals(r.headers.get(name), want, name);
const admin = { token: "admin" };
const doc = '{"name":"a","type":"base"}';

// deno-fmt-ignore
runScenarios("http: routes, methods, bodies", [
  sc("unknown API route", "GET", "/api/v1/nope", 404),
  sc("unknown root path", "GET", "/nope.html", 404),
  sc("extra path segments", "GET", "/api/v1/entities/a/b/c", 404, admin),
  sc("PUT schemas -> 405", "PUT", "/api/v1/schemas", 405, { ...admin, body: {}, expect: allowOf(["GET", "HEAD", "POST"]) }),
  sc("DELETE health -> 405", "DELETE", "/api/v1/health", 405, { expect: allowOf(["GET", "HEAD"]) }),
  sc("PUT record -> 405", "PUT", "/api/v1/entities/x/1", 405, { expect: allowOf(["DELETE", "GET", "HEAD", "PATCH"]) }),
  sc("HEAD health: headers, no body", "HEAD", "/api/v1/health", 200, { expect: isJson }),
  sc("HEAD unknown -> 404 without body", "HEAD", "/api/v1/nope", 404),
  rawPost("malformed JSON", '{"name":', 400),
  rawPost("trailing garbage", `${doc} x`, 400),
  rawPost("JSON array", `[${doc}]`, 400),
  rawPost("JSON string", '"posts"', 400),
  rawPost("JSON number", "42", 400),
  rawPost("JSON null", "null", 400),
  rawPost("empty body", "", 400),
  rawPost("invalid UTF-8", new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), 400),
  rawPost("nesting 33 deep", `{"name":"a","type":"base","rules":${nest(33)}}`, 400),
  rawPost("nesting 200000 deep", `{"a":${nest(200_000)}}`, 400),
  rawPost("over 1 MiB with Content-Length", `{"name":"a","type":"base","x":"${"a".repeat(MiB)}"}`, 413),
  rawPost("text/plain -> 415", doc, 415, { "content-type": "text/plain" }),
  rawPost("form -> 415", "name=a&type=base", 415, { "content-type": "application/x-www-form-urlencoded" }),
  rawPost("multipart on schemas -> 415", doc, 415, { "content-type": "multipart/form-data; boundary=x" }),
  rawPost("no content type -> 415", new Blob([doc]), 415, {}),
  rawPost("application/jsonx -> 415", doc, 415, { "content-type": "application/jsonx" }),
  rawPost("charset and case accepted", '{"name":"ok","type":"base","fields":[]}', 201, { "content-type": "Application/JSON; charset=utf-8" }),
  rawPost("exactly 1 MiB accepted", '{"name":"big","type":"base","fields":[]}'.padEnd(MiB, " "), 201),
], { fresh: "group" });

forEachDb(
  "http: 413 on a chunked body, nesting ≤ 32 accepted, request ids, admin login",
  async (t, db) => {
    const s = await startServer(db);
    const token = await s.adminToken();
    try {
      await t.step(
        "chunked body over 1 MiB without Content-Length",
        async () => {
          let sent = 0;
          const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
          const body = new ReadableStream<Uint8Array>({
            start: (c) => c.enqueue(new TextEncoder().encode(doc.slice(0, -1))),
            pull: (c) => {
              if (sent > 4 * MiB) return c.close();
              sent += chunk.length;
              c.enqueue(chunk);
            },
          });
          const headers = { ...json, authorization: `Bearer ${token}` };
          const init = { method: "POST", body, headers, duplex: "half" };
          const res = await fetch(
            `${s.url}/api/v1/schemas`,
            init as RequestInit,
          );
          const text = await res.text();
          assertEquals([res.status, JSON.parse(text).status], [413, 413], text);
          assert(res.headers.get("x-request-id"), "request id on 413");
          await onlySystem(s);
          assertStatus(await s.request("GET", "/api/v1/health"), 200, "alive");
        },
      );
      await t.step("a record JSON value nested 30 deep is kept", async () => {
        await createEntity(s, {
          name: "docs",
          fields: [{ name: "j", type: "json" }],
        });
        const raw = `{"j":${nest(30)}}`;
        const r = await s.request("POST", "/api/v1/entities/docs", {
          token,
          raw,
          headers: json,
        });
        assertStatus(r, 201);
        assertEquals(JSON.stringify(r.data.j), nest(30));
      });
      // Standing alone on the same server (one server per database).
      await t.step(
        "request ids are unique per request",
        () => uniqueRequestIds(s),
      );
      await t.step(
        "admin login, one answer for every bad credential",
        () => adminLogin(s),
      );
    } finally {
      await s.close();
    }
  },
);

// --- CORS, request ids, health ---------------------------------------------
const preflight = (origin: string) => ({
  origin,
  "access-control-request-method": "PATCH",
  "access-control-request-headers": "authorization, content-type",
});
const ok = "https://ok.example";
const allowlist = { corsOrigins: [ok] };
const preflightOk = (r: Reply) => {
  const methods = r.headers.get("access-control-allow-methods") ?? "";
  for (const m of ["GET", "POST", "PATCH", "DELETE"]) {
    assert(methods.includes(m), `allow-methods has ${m}: ${methods}`);
  }
  const hs = (r.headers.get("access-control-allow-headers") ?? "")
    .toLowerCase();
  assert(hs.includes("authorization") && hs.includes("content-type"), hs);
};
const echoed = (r: Reply) => {
  header("access-control-allow-origin", ok)(r);
  assert(r.headers.get("vary")?.includes("Origin"), "Vary: Origin");
};
const refused = (r: Reply) => {
  header("access-control-allow-origin", null)(r);
  header("access-control-allow-methods", null)(r);
};
// Requests that change nothing: one server per configuration.
// deno-fmt-ignore
runScenarios("http: CORS", [
  sc("preflight, any origin", "OPTIONS", "/api/v1/schemas", 204, {
    headers: preflight("https://a.example"),
    expect: (r) => { header("access-control-allow-origin", "*")(r); preflightOk(r); },
  }),
  sc("GET, any origin", "GET", "/api/v1/health", 200, { headers: { origin: "https://a.example" }, expect: header("access-control-allow-origin", "*") }),
  sc("no Origin, no CORS header", "GET", "/api/v1/health", 200, { expect: header("access-control-allow-origin", null) }),
], { fresh: "group" });
// deno-fmt-ignore
runScenarios("http: CORS with an allowlist", [
  sc("allowlist: preflight echoed", "OPTIONS", "/api/v1/health", 204, {
    headers: preflight(ok), expect: (r) => { echoed(r); preflightOk(r); },
  }),
  sc("allowlist: GET echoed", "GET", "/api/v1/health", 200, { headers: { origin: ok }, expect: echoed }),
  sc("allowlist: preflight, other origin", "OPTIONS", "/api/v1/health", 204, { headers: preflight("https://evil.example"), expect: refused }),
  sc("allowlist: GET, other origin", "GET", "/api/v1/health", 200, { headers: { origin: "https://evil.example" }, expect: refused }),
  sc("allowlist: origin prefix is not a match", "GET", "/api/v1/health", 200, { headers: { origin: `${ok}.evil.example` }, expect: refused }),
], { fresh: "group", config: allowlist });

const safeId = (r: Reply) => {
  const id = r.headers.get("x-request-id") ?? "";
  assert(/^[A-Za-z0-9._-]{1,64}$/.test(id), `safe generated id: ${id}`);
};
// deno-fmt-ignore
runScenarios("http: X-Request-Id and health", [
  sc("valid incoming id echoed", "GET", "/api/v1/health", 200, { headers: { "x-request-id": "abc-123.X_y" }, expect: header("x-request-id", "abc-123.X_y") }),
  sc("echoed on a 404", "GET", "/api/v1/nope", 404, { headers: { "x-request-id": "req-404" }, expect: header("x-request-id", "req-404") }),
  ...["has spaces", "x".repeat(200), "a/b", "<script>"].map((id) =>
    sc(`invalid id ${JSON.stringify(id.slice(0, 12))} replaced`, "GET", "/api/v1/health", 200, {
      headers: { "x-request-id": id },
      expect: (r) => { safeId(r); assert(r.headers.get("x-request-id") !== id, "replaced"); },
    })
  ),
  sc("health", "GET", "/api/v1/health", 200, {
    expect: (r) => {
      assertEquals(Object.keys(r.data).sort(), ["backups", "backups_kind", "database", "database_kind", "files", "files_kind", "status", "uptime", "version"]);
      assertEquals([r.data.status, r.data.version, r.data.database], ["ok", "0.3.7", "ok"]);
      assert(Number.isInteger(r.data.uptime) && r.data.uptime >= 0, `uptime ${r.data.uptime}`);
    },
  }),
], { fresh: "group" });

/** Request ids are unique per request (a step of the test above). */
async function uniqueRequestIds(s: TestServer): Promise<void> {
  const ids = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const r = await s.request(
      "GET",
      i % 2 ? "/api/v1/health" : "/api/v1/nope",
    );
    checkInvariants(r, "GET", true);
    ids.add(r.headers.get("x-request-id")!);
  }
  assertEquals(ids.size, 20);
}

// --- publicDir ---------------------------------------------------------------
/** GET over a raw socket, so the path reaches the server un-normalized. */
async function rawGet(
  s: TestServer,
  path: string,
): Promise<{ status: number; text: string }> {
  const u = new URL(s.url);
  const conn = await Deno.connect({
    hostname: u.hostname,
    port: Number(u.port),
  });
  try {
    const req = `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;
    await conn.write(new TextEncoder().encode(req));
    let text = "";
    const buf = new Uint8Array(65536);
    const dec = new TextDecoder();
    for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
      text += dec.decode(buf.subarray(0, n), { stream: true });
    }
    return { status: Number(text.split(" ")[1]), text };
  } finally {
    conn.close();
  }
}
// deno-fmt-ignore
const TRAVERSAL = [
  "/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/%2e%2e%2fsecret.txt", "/sub/..%2f..%2fsecret.txt",
  "/sub/%2e%2e/%2e%2e/secret.txt", "/..%5csecret.txt", "/sub/..%5c..%5csecret.txt", "/%252e%252e/secret.txt",
  "/a.txt%00", "/a.txt%00.html", "/%00", "/..%00/secret.txt", "/....//secret.txt", "//secret.txt", "/%c0%ae%c0%ae/secret.txt",
];

forEachDb(
  "http: publicDir files, index.html, no listing, no traversal",
  async (t, db) => {
    const root = await Deno.makeTempDir({ prefix: "mb_pub_" });
    const pub = `${root}/pub`;
    for (const d of ["sub", "empty", "docs"]) {
      await Deno.mkdir(`${pub}/${d}`, {
        recursive: true,
      });
    }
    const files: Record<string, string> = {
      "pub/index.html": "<h1>home</h1>",
      "pub/a.txt": "hello",
      "pub/sub/f.txt": "inner",
      "pub/docs/index.html": "docs-index",
      "secret.txt": "TOP-SECRET",
    };
    for (const [p, text] of Object.entries(files)) {
      await Deno.writeTextFile(
        `${root}/${p}`,
        text,
      );
    }
    await Deno.symlink(`${root}/secret.txt`, `${pub}/link.txt`);
    await Deno.symlink(root, `${pub}/linkdir`);
    const s = await startServer(db, { publicDir: pub });
    const get = (p: string, method = "GET") => s.request(method, p);
    try {
      await t.step("files and index.html", async () => {
        let r = await get("/");
        assertEquals([r.status, r.text], [200, "<h1>home</h1>"]);
        assert(r.headers.get("content-type")?.startsWith("text/html"), "html");
        r = await get("/a.txt");
        const type = r.headers.get("content-type")?.split(";")[0];
        assertEquals([r.status, r.text, type], [200, "hello", "text/plain"]);
        assert(r.headers.get("x-request-id"), "request id on static files");
        assertEquals((await get("/sub/f.txt")).text, "inner");
        assertEquals((await get("/docs/")).text, "docs-index");
        r = await get("/a.txt", "HEAD");
        assertEquals([r.status, r.text, r.headers.get("content-length")], [
          200,
          "",
          "5",
        ]);
      });
      await t.step("no listing, no symlink escape", async () => {
        const paths = [
          "/sub/",
          "/sub",
          "/empty/",
          "/empty",
          "/missing.txt",
          "/link.txt",
          "/linkdir/secret.txt",
          "/linkdir/",
        ];
        for (const p of paths) {
          const r = await get(p);
          assertStatus(r, 404, p);
          assert(
            !r.text.includes("f.txt") && !r.text.includes("TOP-SECRET"),
            p,
          );
        }
      });
      for (
        const p of [
          ...TRAVERSAL,
          `/..${root}/secret.txt`,
          `/${encodeURIComponent(`${root}/secret.txt`)}`,
        ]
      ) {
        await t.step(`traversal ${p}`, async () => {
          const raw = await rawGet(s, p);
          assert(!raw.text.includes("TOP-SECRET"), "served the secret");
          assert(
            raw.status === 400 || raw.status === 404,
            `status ${raw.status}`,
          );
        });
      }
      await t.step("API routes are not shadowed", async () => {
        assertEquals((await get("/api/v1/health")).data.status, "ok");
        const r = await get("/api/nope");
        assertEquals([r.status, r.body?.status], [404, 404]);
      });
    } finally {
      await s.close();
      await Deno.remove(root, { recursive: true });
    }
  },
);

// --- Admin setup and login -----------------------------------------------
forEachDb("http: first-admin setup", async (t, db) => {
  const s = await startServer(db);
  const url = "/api/v1/sys/admins/setup";
  const setupToken = s.app.setupToken;
  const good = { email: "root@example.com", password: "a-long-password" };
  try {
    assert(typeof setupToken === "string" && setupToken.length >= 16, "token");
    // deno-fmt-ignore
    const tries: [Record<string, unknown>, string | undefined, number][] = [
      [good, undefined, 401], [good, "wrong-token", 401],
      [good, await signToken({ sub: "x", entity: "mb_admins" }), 401],
      [{ ...good, email: "not-an-email" }, setupToken, 400], [{ ...good, password: "1234567" }, setupToken, 400],
      [{ email: good.email }, setupToken, 400], [{ password: good.password }, setupToken, 400],
    ];
    for (const [body, token, status] of tries) {
      await t.step(
        `${JSON.stringify(body)} ${token?.slice(0, 8)} -> ${status}`,
        async () => {
          const r = await s.request("POST", url, { body, token });
          assertStatus(r, status);
          assert(!r.text.includes(good.password), "no password echoed");
        },
      );
    }
    await t.step(
      "one concurrent setup wins; reply has no password",
      async () => {
        const other = { ...good, email: "other@example.com" };
        const [a, b] = await Promise.all([
          s.request("POST", url, { body: good, token: setupToken }),
          s.request("POST", url, { body: other, token: setupToken }),
        ]);
        assertEquals([a.status, b.status].sort(), [201, 403]);
        const won = a.status === 201 ? a : b;
        checkInvariants(won, "POST", true);
        assertEquals(Object.keys(won.data).sort(), ["token", "user"]);
        assert(typeof won.data.token === "string" && won.data.user.id, "user");
        assert(
          !won.text.includes("scrypt$") && !won.text.includes(good.password),
          "no password",
        );
        const token = won.data.token;
        assertStatus(await s.request("GET", "/api/v1/schemas", { token }), 200);
        for (const tk of [setupToken, undefined, token]) {
          const body = { ...good, email: "third@example.com" };
          assertStatus(await s.request("POST", url, { body, token: tk }), 403);
        }
      },
    );
  } finally {
    await s.close();
  }
});

/** Admin login, one answer for every bad credential (a step above). */
async function adminLogin(s: TestServer): Promise<void> {
  await s.adminToken();
  const login = (identity: string, password: string) =>
    s.request("POST", "/api/v1/sys/admins/login", {
      body: { identity, password },
    });
  const wrongPw = await login("admin@example.com", "wrong-password-1");
  const unknown = await login("nobody@example.com", "wrong-password-1");
  assertStatus(wrongPw, 401);
  assertEquals(unknown.body, wrongPw.body, "same 401 body");
  const r = await login("admin@example.com", s.adminPassword);
  assertStatus(r, 200);
  assertEquals(Object.keys(r.data).sort(), ["token", "user"]);
  assertEquals(r.data.user.email, "admin@example.com");
  assert(
    !r.text.includes("scrypt$") && !r.text.includes(s.adminPassword),
    "no password",
  );
}

// --- Tokens ------------------------------------------------------------------
const b64 = (o: unknown) =>
  btoa(JSON.stringify(o)).replaceAll("=", "").replaceAll("+", "-").replaceAll(
    "/",
    "_",
  );
/**
 * The tokens of the scenarios below, made once per server (they share one:
 * every scenario is a refused or read-only request, and `nothingCreated`
 * checks each refused write).
 */
const tokenSets = new WeakMap<TestServer, Promise<Vars>>();
async function tokens(s: TestServer, v: Vars): Promise<void> {
  let set = tokenSets.get(s);
  if (!set) tokenSets.set(s, set = makeTokens(s));
  Object.assign(v, await set);
}
async function makeTokens(s: TestServer): Promise<Vars> {
  const v: Vars = {};
  const good = await s.adminToken();
  const [h, p, sig] = good.split(".");
  const claims = JSON.parse(atob(p.replaceAll("-", "+").replaceAll("_", "/")));
  const sub: string = claims.sub, entity = "mb_admins";
  const other = "another-secret-0123456789-abcdefghij";
  v.good = good;
  v.tampered = `${h}.${p}.${sig.slice(0, -2)}${
    sig.endsWith("AA") ? "BB" : "AA"
  }`;
  v.payload = `${h}.${b64({ ...claims, sub: "someone-else" })}.${sig}`;
  v.none = `${b64({ alg: "none", typ: "JWT" })}.${p}.`;
  v.other = await signToken({ sub, entity, secret: other });
  v.expired = await signToken({ sub, entity, expIn: -60 });
  v.noexp = await signToken({ sub, entity, expIn: null });
  v.hs512 = await signToken({ sub, entity, alg: "HS512" });
  v.ghost = await signToken({
    sub: "01900000-0000-7000-8000-000000000000",
    entity,
  });
  v.user = (await userToken(s)).token;
  v.wrongEntity = await signToken({ sub, entity: "users" });
  return v;
}
const KINDS = [
  "tampered",
  "payload",
  "none",
  "other",
  "expired",
  "noexp",
  "hs512",
  "ghost",
  "wrongEntity",
];
const nothingCreated = async (s: TestServer) =>
  assertStatus(
    await s.request("GET", "/api/v1/schemas/evil", {
      token: await s.adminToken(),
    }),
    404,
  );
const evil = {
  name: "evil",
  type: "base",
  email: "e@example.com",
  password: "12345678",
};
// deno-fmt-ignore
runScenarios("http: tokens", [
  ...KINDS.map((k) =>
    sc(`${k} token -> 401`, "GET", "/api/v1/schemas", 401, { setup: tokens, token: (v) => v[k], notContains: ["mb_admins"] })
  ),
  ...KINDS.map((k) =>
    sc(`${k} token cannot create -> 401`, "POST", "/api/v1/schemas", 401, { setup: tokens, token: (v) => v[k], body: evil, after: nothingCreated })
  ),
  ...["Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer a b", "Token abc"].map((h) =>
    sc(`Authorization: ${h} -> 401`, "GET", "/api/v1/schemas", 401, { headers: { authorization: h } })
  ),
  ...[["GET", "/api/v1/schemas"], ["POST", "/api/v1/schemas"], ["POST", "/api/v1/sys/admins/setup"]].map(([m, url]): Scenario =>
    sc(`user token on admin-only ${m} ${url} -> 403`, m, url, 403, {
      setup: tokens, token: (v) => v.user, body: m === "POST" ? evil : undefined, notContains: ["mb_admins"], after: nothingCreated,
    })
  ),
  sc("a valid admin token passes", "GET", "/api/v1/schemas", 200, { setup: tokens, token: (v) => v.good, contains: ["mb_admins"] }),
], { fresh: "group" });
