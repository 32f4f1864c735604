/**
 * The OpenAPI document feeds a generic generator from npm: openapi-typescript
 * turns a user's document into types, and a program using openapi-fetch with
 * them type-checks and makes working calls against a real server (create,
 * get with expand, list with filter, update, an error envelope); a
 * misspelled field fails its type check (on a JSON-only body: where a body
 * may also be multipart, openapi-fetch accepts either shape loosely). The document is the same on both
 * databases (tests/openapi_test.ts checks it on each): one server, SQLite.
 */

import openapiTS, { astToString } from "openapi-typescript";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, startServer } from "./_server.ts";
import { fastUser, fixtureAdmin, issue } from "./_auth_fixtures.ts";
import { openApiSchemas } from "./_openapi_fixtures.ts";

const CONFIG = fileURLToPath(new URL("../deno.json", import.meta.url));

const CALLS = `
import createClient from "openapi-fetch";
import type { paths } from "./api.ts";

const client = createClient<paths>({
  baseUrl: Deno.env.get("MB_URL"),
  headers: { authorization: \`Bearer \${Deno.env.get("MB_TOKEN")}\` },
});
const created = await client.POST("/api/v1/entities/posts", {
  body: { title: "From openapi-fetch", score: 3, meta: { tags: ["a"] } },
});
if (!created.data) throw new Error(JSON.stringify(created.error));
const id: string = created.data.data.id;
const got = await client.GET("/api/v1/entities/posts/{id}", {
  params: { path: { id }, query: { expand: "author" } },
});
const title: string = got.data!.data.title;
const author: string | undefined = got.data!.data.expand?.author?.email;
const list = await client.GET("/api/v1/entities/posts", {
  params: { query: { limit: 10, filter: "score >= 3", count: "true" } },
});
const patched = await client.PATCH("/api/v1/entities/posts/{id}", {
  params: { path: { id } },
  body: { score: 4 },
});
const health = await client.GET("/api/v1/health");
const bad = await client.POST("/api/v1/entities/posts", {
  body: { title: "<b>" },
});
console.log(JSON.stringify({
  title,
  author,
  total: list.data!.data.total,
  score: patched.data!.data.score,
  health: health.data!.data.status,
  badStatus: bad.response.status,
  badField: Object.keys(bad.error?.data?.fields ?? {}),
}));
`;

const WRONG = `
import createClient from "openapi-fetch";
import type { paths } from "./api.ts";
const client = createClient<paths>({ baseUrl: "http://localhost" });
await client.POST("/api/v1/entities/comments", { body: { bdy: "x", post: "p" } });
`;

async function deno(dir: string, args: string[], env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [args[0], "--config", CONFIG, ...args.slice(1)],
    cwd: dir,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
}

Deno.test({
  name: "openapi-typescript and openapi-fetch make working calls",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const s = await startServer("sqlite");
    const dir = await Deno.makeTempDir({ prefix: "mb_openapi_" });
    try {
      const admin = await fixtureAdmin(s);
      await openApiSchemas(s, admin);
      const ann = await fastUser(s, "users", {
        email: "ann@example.com",
        name: "Ann",
      });
      const user = await issue(s, "users", ann.id);
      const doc = await (await fetch(`${s.url}/api/v1/openapi.json`, {
        headers: { authorization: `Bearer ${user}` },
      })).json();
      await Deno.writeTextFile(
        `${dir}/api.ts`,
        astToString(await openapiTS(doc)),
      );
      await Deno.writeTextFile(`${dir}/calls.ts`, CALLS);
      await Deno.writeTextFile(`${dir}/wrong.ts`, WRONG);
      const checked = await deno(dir, ["check", "calls.ts"], {});
      assertEquals(checked.code, 0, checked.stderr.slice(0, 3000));
      const ran = await deno(dir, [
        "run",
        "--allow-net",
        "--allow-env",
        "calls.ts",
      ], {
        MB_URL: s.url,
        MB_TOKEN: user,
      });
      assertEquals(ran.code, 0, ran.stderr.slice(0, 3000));
      assertEquals(JSON.parse(ran.stdout), {
        title: "From openapi-fetch",
        author: "ann@example.com",
        total: 1,
        score: 4,
        health: "ok",
        badStatus: 400,
        badField: ["title"],
      });
      const wrong = await deno(dir, ["check", "wrong.ts"], {});
      assert(wrong.code !== 0, "a misspelled field type-checks");
      assert(wrong.stderr.includes("bdy"), wrong.stderr);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await s.close();
    }
  },
});
