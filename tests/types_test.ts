/**
 * Generated TypeScript types: `GET /api/v1/types.ts` (admins only) and
 * `moonbase types --out <file>` give the same module, and a program using
 * it type-checks with `deno check` — typed by entity name, expand-aware for
 * literal `expand` strings — while a misspelled field fails the check. One
 * server per database, with the schemas of tests/_openapi_fixtures.ts.
 */

import {
  assert,
  assertEquals,
  forEachDb,
  startServer,
  type TestServer,
} from "./_server.ts";
import { fastUser, fixtureAdmin, issue } from "./_auth_fixtures.ts";
import { openApiSchemas } from "./_openapi_fixtures.ts";
import { assertErrorExit, childEnv, show } from "./_cli_fixtures.ts";
import { cliSession } from "./_cli_session.ts";
import { denoCheck, diagnosticsIn } from "./_deno_check.ts";
import { TEST_JWT_SECRET } from "./_server.ts";

/** A client shaped as the contract says, used by the checked programs. */
const CLIENT = `
import type { Schema, WithExpand } from "./types.ts";
type Entry = { record: unknown; create: unknown; update: unknown };
declare class Moonbase<S extends Record<string, Entry>> {
  constructor(url: string);
  entity<N extends keyof S & string>(name: N): {
    get(id: string): Promise<S[N]["record"]>;
    get<P extends string>(
      id: string,
      query: { expand: P },
    ): Promise<WithExpand<S[N]["record"], P>>;
    create(data: S[N]["create"]): Promise<S[N]["record"]>;
    update(id: string, data: S[N]["update"]): Promise<S[N]["record"]>;
  };
}
export const mb = new Moonbase<Schema>("http://localhost:7070");
`;

const USES = `
import { mb } from "./client.ts";
import type { PostsCreate, PostsRecord, UsersUpdate } from "./types.ts";

const post: PostsRecord = await mb.entity("posts").get("id");
const title: string = post.title;
const status: "draft" | "published" | null = post.status;
const score: number | null = post.score;
const made: PostsCreate = { title: "Hello", attachment: new Blob(["x"]) };
await mb.entity("posts").create(made);
await mb.entity("users").update("id", { name: "Ann", oldPassword: "pw" } satisfies UsersUpdate);

const expanded = await mb.entity("posts").get("id", {
  expand: "author, comments_via_post.post",
});
const name: string | undefined = expanded.expand.author?.name;
const again: string | undefined =
  expanded.expand.comments_via_post?.[0]?.expand.post?.title;
// @ts-expect-error: not asked for
expanded.expand.nothing;
const plain = await mb.entity("comments").get("id");
// @ts-expect-error: a record read without expand has expand optional
plain.expand.post;
console.log(title, status, score, name, again);
`;

/** Programs that must not type-check, and what the error names. */
const MISTAKES: [string, string][] = [
  [`const t: string = (await mb.entity("posts").get("id")).titel;`, "titel"],
  [`await mb.entity("posts").create({ titel: "x" });`, "titel"],
  [`await mb.entity("postz").get("id");`, "postz"],
  [
    `await mb.entity("posts").create({ title: "x", status: "drafted" });`,
    "drafted",
  ],
];

async function typesAs(s: TestServer, token?: string) {
  const res = await fetch(`${s.url}/api/v1/types.ts`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

forEachDb("generated types", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await fixtureAdmin(s);
    await openApiSchemas(s, admin);
    const ann = await fastUser(s, "users", {
      email: "ann@example.com",
      name: "Ann",
    });
    const user = await issue(s, "users", ann.id);
    let served = "";

    await t.step("GET /api/v1/types.ts is for admins only", async () => {
      assertEquals((await typesAs(s)).status, 401);
      assertEquals((await typesAs(s, user)).status, 403);
      const got = await typesAs(s, admin);
      assertEquals(got.status, 200);
      assert(got.headers.get("content-type")?.startsWith("text/plain"));
      served = got.text;
      for (
        const line of [
          "export type PostsRecord = {",
          "export type PostsCreate = {",
          "export type PostsUpdate = {",
          "export type PostsExpand = {",
          "export type PostTitlesCreate = never;",
          '"posts": { record: PostsRecord; create: PostsCreate; update: PostsUpdate };',
          '"secrets": { record: SecretsRecord; create: SecretsCreate; update: SecretsUpdate };',
        ]
      ) assert(served.includes(line), `missing: ${line}`);
      const usersRecord = served.split("export type UsersRecord = {")[1]
        .split("};")[0];
      assert(!usersRecord.includes("password"), "a read type has password");
    });

    await t.step("moonbase types --out writes the same module", async () => {
      const dir = await Deno.makeTempDir({ prefix: "mb_types_" });
      try {
        const out = `${dir}/types.ts`;
        const where = [
          "--dataDir",
          s.dataDir,
          ...(db === "postgres"
            ? ["--database", "PSQL", "--connection", s.connection!]
            : []),
        ];
        // The three commands run one after another in one process.
        const cli = cliSession(childEnv(TEST_JWT_SECRET));
        try {
          const r = await cli.run([...where, "types", "--out", out]);
          assertEquals(r.code, 0, show(r));
          assertEquals(await Deno.readTextFile(out), served);
          const printed = await cli.run([...where, "types"]);
          assertEquals(printed.stdout, served);
          const bad = await cli.run(
            [...where, "types", "--out", `${dir}/missing/dir/types.ts`],
          );
          assertErrorExit(bad, /Cannot write the types/);
        } finally {
          await cli.close();
        }
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });

    if (db !== "sqlite") return; // the checks below do not touch the database
    await t.step("a program using the types type-checks", async () => {
      const dir = await Deno.makeTempDir({ prefix: "mb_types_" });
      try {
        await Deno.writeTextFile(`${dir}/types.ts`, served);
        await Deno.writeTextFile(`${dir}/client.ts`, CLIENT);
        await Deno.writeTextFile(`${dir}/uses.ts`, USES);
        // One `deno check` for the program and every mistake (each in a
        // file of its own): each diagnostic names the file it is in.
        const wrong = MISTAKES.map((_, i) => `wrong_${i}.ts`);
        for (const [i, [line]] of MISTAKES.entries()) {
          await Deno.writeTextFile(
            `${dir}/${wrong[i]}`,
            `import { mb } from "./client.ts";\n${line}\n`,
          );
        }
        const checked = await denoCheck(dir, ["--quiet", "uses.ts", ...wrong]);
        // The program using the types (and the types, the client) check.
        const elsewhere = checked.diagnostics.filter((d) =>
          !wrong.includes(d.file)
        );
        assertEquals(
          elsewhere.map((d) => d.text),
          [],
          checked.out.slice(0, 3000),
        );
        assertEquals(
          checked.found,
          checked.diagnostics.length,
          `every error is a diagnostic of a file: ${
            checked.out.slice(0, 3000)
          }`,
        );
        for (const [i, [line, name]] of MISTAKES.entries()) {
          const mine = diagnosticsIn(checked, wrong[i]);
          assert(
            checked.code !== 0 && mine !== "",
            `type-checks, but must not: ${line}`,
          );
          assert(
            mine.includes(name),
            `the error does not name ${name}: ${mine}`,
          );
        }
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  } finally {
    await s.close();
  }
});
