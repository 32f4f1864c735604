/**
 * The backup commands: `backup create|list|restore` with the server
 * stopped, and `move-to`, the SQLite project into an empty PostgreSQL
 * database in one command (verified table by table), refusing a database
 * that holds a project.
 */
import {
  assert,
  assertEquals,
  assertStatus,
  DATABASES,
  seedUser,
  startServer,
  TEST_JWT_SECRET,
  type TestServer,
} from "./_server.ts";
import { childEnv, runCli, show } from "./_cli_fixtures.ts";
import { startPostgres } from "./_pg.ts";
import { setupBlog } from "./_records_fixtures.ts";
import { userToken } from "./_auth_fixtures.ts";

const PASSWORD = "cli-backup-pass-1";
const env = () => childEnv(TEST_JWT_SECRET);

async function seed(s: TestServer): Promise<void> {
  const token = await setupBlog(s);
  assertStatus(
    await s.request("POST", "/api/v1/schemas", {
      token,
      body: { name: "members", type: "auth", fields: [] },
    }),
    201,
  );
  await seedUser(s, "members", { email: "bo@example.com" }, PASSWORD);
  for (let i = 0; i < 12; i++) {
    assertStatus(
      await s.request("POST", "/api/v1/entities/posts", {
        token,
        body: {
          title: `p${i}`,
          meta: { b: i, a: [i, "x"] },
          published: i % 2 === 0,
        },
      }),
      201,
    );
  }
}

async function posts(s: TestServer, token: string): Promise<unknown[]> {
  const r = await s.request(
    "GET",
    "/api/v1/entities/posts?sort=created,id&limit=100",
    {
      token,
    },
  );
  assertStatus(r, 200);
  return r.data.items;
}

async function adminLogin(s: TestServer): Promise<string> {
  const r = await s.request("POST", "/api/v1/sys/admins/login", {
    body: { identity: "admin@example.com", password: s.adminPassword },
  });
  assertStatus(r, 200, "admin login");
  return r.data.token;
}

Deno.test({
  name: "backup create, list and restore with the server stopped [sqlite]",
  ignore: !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const from = await Deno.makeTempDir({ prefix: "mb_bk_from_" });
    const into = await Deno.makeTempDir({ prefix: "mb_bk_into_" });
    try {
      const a = await startServer("sqlite", { dataDir: from });
      await seed(a);
      const before = await posts(a, await a.adminToken());
      await a.close();

      const made = await runCli([
        "--dataDir",
        from,
        "backup",
        "create",
        "nightly",
      ], { env: env() });
      assertEquals(made.code, 0, show(made));
      assert(made.stdout.trim().endsWith("backups/nightly.tar.gz"), show(made));
      assert(/backup: done: \d+ records/.test(made.stderr), show(made));
      const listed = await runCli(["--dataDir", from, "backup", "list"], {
        env: env(),
      });
      assert(listed.stdout.startsWith("nightly.tar.gz\t"), show(listed));
      const out = `${into}/../mb_bk_out_${crypto.randomUUID()}.tar.gz`;
      const at = await runCli([
        "--dataDir",
        from,
        "backup",
        "create",
        "--out",
        out,
      ], { env: env() });
      assertEquals(at.code, 0, show(at));

      const restored = await runCli([
        "--dataDir",
        into,
        "backup",
        "restore",
        out,
      ], { env: env() });
      assertEquals(restored.code, 0, show(restored));
      assert(/Restored .*rows/.test(restored.stdout), show(restored));
      await Deno.remove(out);

      const b = await startServer("sqlite", { dataDir: into });
      try {
        assertEquals(await posts(b, await adminLogin(b)), before);
        await userToken(b, "members", "bo@example.com", PASSWORD);
      } finally {
        await b.close();
      }
      const missing = await runCli(["--dataDir", into, "backup", "restore"], {
        env: env(),
      });
      assertEquals(missing.code, 2, show(missing));
      assert(
        /backup restore needs <file\|name>/.test(missing.stderr),
        show(missing),
      );
    } finally {
      await Deno.remove(from, { recursive: true }).catch(() => {});
      await Deno.remove(into, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "move-to carries a SQLite project into an empty PostgreSQL, checked",
  ignore: !DATABASES.includes("postgres") || !DATABASES.includes("sqlite"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "mb_move_" });
    try {
      const a = await startServer("sqlite", { dataDir: dir });
      await seed(a);
      const before = await posts(a, await a.adminToken());
      await a.close();
      const url = await (await startPostgres()).createDatabase();
      const moved = await runCli(
        [
          "--dataDir",
          dir,
          "--database",
          "PSQL",
          "--connection",
          url,
          "move-to",
        ],
        { env: env() },
      );
      assertEquals(moved.code, 0, show(moved));
      assert(/checked table by table/.test(moved.stdout), show(moved));

      const b = await startServer("postgres", {
        dataDir: dir,
        connection: url,
      });
      try {
        assertEquals(await posts(b, await adminLogin(b)), before);
        await userToken(b, "members", "bo@example.com", PASSWORD);
      } finally {
        await b.close();
      }
      // A database that holds a project is refused, and SQLite is untouched.
      const again = await runCli(
        [
          "--dataDir",
          dir,
          "--database",
          "PSQL",
          "--connection",
          url,
          "move-to",
        ],
        { env: env() },
      );
      assertEquals(again.code, 2, show(again));
      assert(
        /already holds a Moonbase project/.test(again.stderr),
        show(again),
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
