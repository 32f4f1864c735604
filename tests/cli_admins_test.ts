/**
 * `moonbase admins --add/--ls/--rm` on a SQLite data directory: bad input is
 * refused with exit 2 and leaves no admin, an added admin is listed (without
 * password or hash) and logs in on a server on the same directory, the last
 * admin cannot be removed, a removed admin can no longer log in.
 *
 * @module
 */

import { assert, assertEquals } from "./_server.ts";
import {
  assertErrorExit,
  call,
  dataDir,
  expectStatus,
  HOST,
  opts,
  type Output,
  runCli,
  seedAdmins,
  type Served,
  show,
  startCli,
} from "./_cli_fixtures.ts";
import { cliSession } from "./_cli_session.ts";

const FIRST = { "first@example.com": "first-password-1" };

Deno.test({
  ...opts,
  name: "cli admins: --ls on a fresh dataDir lists nobody",
  async fn() {
    const { d, cleanup } = await dataDir();
    try {
      const o = await runCli(["admins", "--ls", ...d]);
      assertEquals(o.code, 0, show(o));
      assert(!o.stdout.includes("@"), show(o));
    } finally {
      await cleanup();
    }
  },
});

Deno.test({
  ...opts,
  name: "cli admins: --add refuses bad input with exit 2 and adds no admin",
  async fn(t) {
    const cases: {
      name: string;
      email: string;
      password: string;
      mention: RegExp;
    }[] = [
      ...["not-an-email", "a@", "@b.com", ""].map((email) => ({
        name: `bad email ${JSON.stringify(email)}`,
        email,
        password: "password-123",
        mention: /email/i,
      })),
      {
        name: "a 7-character password",
        email: "short@example.com",
        password: "1234567",
        mention: /password/i,
      },
    ];
    // The rows run in one session (one process), each on a data directory
    // of its own; each row's checks are a step of its own.
    const cli = cliSession();
    const runs: { add: Output; ls: Output }[] = [];
    try {
      for (const c of cases) {
        const dir = await dataDir();
        const add = await cli.run([
          "admins",
          "--add",
          c.email,
          c.password,
          ...dir.d,
        ]);
        const ls = await cli.run(["admins", "--ls", ...dir.d]);
        await dir.cleanup();
        runs.push({ add, ls });
      }
    } finally {
      await cli.close();
    }
    for (const [i, c] of cases.entries()) {
      await t.step(c.name, () => {
        const { add, ls } = runs[i];
        assertErrorExit(add, c.mention);
        assertEquals(ls.code, 0, show(ls));
        assert(!ls.stdout.includes("@"), `no admin expected:\n${show(ls)}`);
      });
    }
  },
});

Deno.test({
  ...opts,
  name: "cli admins: --add creates an admin; --ls lists it",
  async fn() {
    const { d, cleanup } = await dataDir();
    const cli = cliSession();
    try {
      const o = await cli.run([
        ...d,
        "admins",
        "--add",
        "first@example.com",
        "first-password-1",
      ]);
      assertEquals(o.code, 0, show(o));
      assert(o.stdout.includes("first@example.com"), show(o));
      assert(!o.stdout.includes("first-password-1"), "password not echoed");
      assert(!o.stderr.includes("first-password-1"), "password not echoed");
      const ls = await cli.run(["admins", "--ls", ...d]);
      assertEquals(ls.code, 0, show(ls));
      assert(ls.stdout.includes("first@example.com"), show(ls));
      assert(!ls.stdout.includes("scrypt$"), "no hash in the listing");
    } finally {
      await cli.close();
      await cleanup();
    }
  },
});

Deno.test({
  ...opts,
  name: "cli admins: refusals with one admin (existing email, last, unknown)",
  async fn(t) {
    // One directory with one admin: every step is a refused command that
    // changes nothing, and the last one checks the admin is still there.
    const { d, dir, cleanup } = await dataDir();
    const cli = cliSession();
    try {
      await seedAdmins(dir, FIRST);
      await t.step("--add of an existing email: exit 2", async () => {
        const o = await cli.run([
          "admins",
          "--add",
          "first@example.com",
          "other-password-1",
          ...d,
        ]);
        assertErrorExit(o);
      });
      await t.step("--rm of an unknown admin: exit 2", async () => {
        const o = await cli.run(["admins", "--rm", "nobody@example.com", ...d]);
        assertErrorExit(o);
      });
      await t.step("--rm refuses to remove the last admin", async () => {
        const o = await cli.run(["admins", "--rm", "first@example.com", ...d]);
        assertErrorExit(o, /last/i);
        const ls = await cli.run(["admins", "--ls", ...d]);
        assert(ls.stdout.includes("first@example.com"), show(ls));
      });
    } finally {
      await cli.close();
      await cleanup();
    }
  },
});

Deno.test({
  ...opts,
  name: "cli admins: the admin logs in on a server on the same dataDir",
  async fn() {
    const { d, dir, cleanup } = await dataDir();
    let server: Served | undefined;
    try {
      await seedAdmins(dir, FIRST);
      server = await startCli([...d, "serve", "--port", "0", "--host", HOST]);
      assert(
        !server.stdout().includes("/mb/setup?token="),
        `no setup link once an admin exists:\n${server.stdout()}`,
      );
      let r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
        body: { identity: "first@example.com", password: "first-password-1" },
      });
      expectStatus(r, 200, "admin login");
      assert(
        typeof r.data.token === "string" &&
          r.data.token.split(".").length === 3,
      );
      assertEquals(r.data.user.email, "first@example.com");
      assertEquals(r.data.user.password, undefined);
      const token = r.data.token;
      r = await call(server.url, "GET", "/api/v1/schemas", { token });
      expectStatus(r, 200, "schemas with the admin token");
      r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
        body: { identity: "first@example.com", password: "wrong-password" },
      });
      expectStatus(r, 401, "wrong password");
      const stopped = await server.stop();
      assertEquals(stopped, { code: 0, timedOut: false });
      server = undefined;
    } finally {
      await server?.kill();
      await cleanup();
    }
  },
});

Deno.test({
  ...opts,
  name: "cli admins: --rm with two admins; the removed one cannot log in",
  async fn() {
    const { d, dir, cleanup } = await dataDir();
    const cli = cliSession();
    let server: Served | undefined;
    try {
      await seedAdmins(dir, FIRST);
      let o = await cli.run([
        "admins",
        "--add",
        "second@example.com",
        "second-password-1",
        ...d,
      ]);
      assertEquals(o.code, 0, show(o));
      o = await cli.run(["admins", "--rm", "first@example.com", ...d]);
      assertEquals(o.code, 0, show(o));
      const ls = await cli.run(["admins", "--ls", ...d]);
      assertEquals(ls.code, 0, show(ls));
      assert(!ls.stdout.includes("first@example.com"), show(ls));
      assert(ls.stdout.includes("second@example.com"), show(ls));
      o = await cli.run(["admins", "--rm", "second@example.com", ...d]);
      assertErrorExit(o, /last/i);

      server = await startCli([...d, "serve", "--port", "0", "--host", HOST]);
      let r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
        body: { identity: "first@example.com", password: "first-password-1" },
      });
      expectStatus(r, 401, "removed admin login");
      r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
        body: {
          identity: "second@example.com",
          password: "second-password-1",
        },
      });
      expectStatus(r, 200, "remaining admin login");
    } finally {
      await cli.close();
      await server?.kill();
      await cleanup();
    }
  },
});
