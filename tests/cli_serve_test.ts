/**
 * `moonbase serve`: `--port 0` with options before and after the command,
 * health, the one-time setup link (its token is the one the setup endpoint
 * wants, and differs per server), SIGTERM exits 0; the JWT secret: a 0600
 * `.jwt_secret` file with a warning when MB_JWT_SECRET is unset (reused on
 * restart), none when it is set, and a too short one refused.
 *
 * @module
 */

import { assert, assertEquals } from "./_server.ts";
import {
  assertErrorExit,
  call,
  childEnv,
  exists,
  expectStatus,
  HOST,
  opts,
  runCli,
  SECRET,
  type Served,
  startCli,
  tempDir,
} from "./_cli_fixtures.ts";

Deno.test({
  ...opts,
  name: "cli: serve --port 0 (options before and after serve)",
  async fn() {
    const dirs = [await tempDir(), await tempDir()];
    const servers: Served[] = [];
    try {
      const before = await startCli([
        "--dataDir",
        dirs[0],
        "--port",
        "0",
        "--host",
        HOST,
        "serve",
      ]);
      servers.push(before);
      const after = await startCli([
        "serve",
        "--port",
        "0",
        "--host",
        HOST,
        "--dataDir",
        dirs[1],
      ]);
      servers.push(after);
      for (const s of servers) {
        assert(s.port > 0, `port ${s.port}`);
        const r = await call(s.url, "GET", "/api/v1/health");
        expectStatus(r, 200, "health");
        assertEquals(r.data.status, "ok");
        assertEquals(r.data.version, "0.3.7");
        assertEquals(r.data.database, "ok");
        // No admin yet: a one-time setup link.
        const link = /(http:\/\/\S+\/mb\/setup\?token=([A-Za-z0-9_-]+))/.exec(
          s.stdout(),
        );
        assert(link, `no setup link in stdout:\n${s.stdout()}`);
        assert(link[1].includes(`:${s.port}/`), link[1]);
        assert(!s.stderr().split("\n").some((l) => /^\s+at /.test(l)));
      }
      // Each server has its own setup token.
      const tok = (s: Served) => /setup\?token=(\S+)/.exec(s.stdout())![1];
      assert(tok(before) !== tok(after), "setup tokens differ");
      // The token from the link is what the setup endpoint wants.
      let r = await call(before.url, "POST", "/api/v1/sys/admins/setup", {
        body: { email: "root@example.com", password: "root-password-1" },
      });
      expectStatus(r, 401, "setup without the token");
      r = await call(before.url, "POST", "/api/v1/sys/admins/setup", {
        token: tok(after),
        body: { email: "root@example.com", password: "root-password-1" },
      });
      expectStatus(r, 401, "setup with another server's token");
      r = await call(before.url, "POST", "/api/v1/sys/admins/setup", {
        token: tok(before),
        body: { email: "root@example.com", password: "root-password-1" },
      });
      expectStatus(r, 201, "setup with the printed token");
      assert(typeof r.data.token === "string");
      for (const s of servers) {
        const { code, timedOut } = await s.stop("SIGTERM");
        assertEquals({ code, timedOut }, { code: 0, timedOut: false });
      }
    } finally {
      for (const s of servers) await s.kill();
      for (const d of dirs) {
        await Deno.remove(d, { recursive: true }).catch(() => {});
      }
    }
  },
});

// ------------------------------------------------------------ JWT secret

Deno.test({
  ...opts,
  name:
    "cli: without MB_JWT_SECRET a 0600 secret file is created, with a warning",
  async fn() {
    const dir = await tempDir();
    let server: Served | undefined;
    try {
      const args = ["--dataDir", dir, "serve", "--port", "0", "--host", HOST];
      server = await startCli(args, childEnv(null));
      const file = `${dir}/.jwt_secret`;
      const info = await Deno.stat(file);
      assertEquals((info.mode ?? 0) & 0o777, 0o600, "mode of .jwt_secret");
      const secret = (await Deno.readTextFile(file)).trim();
      assert(secret.length >= 32, "secret of at least 32 characters");
      const warning = server.stderr() + server.stdout();
      assert(
        /warn/i.test(warning) && warning.includes("MB_JWT_SECRET"),
        `a warning naming MB_JWT_SECRET:\n${warning}`,
      );
      assert(!warning.includes(secret), "the secret is never printed");
      assertEquals(await server.stop(), { code: 0, timedOut: false });
      // A restart reuses the same secret (tokens survive restarts).
      server = await startCli(args, childEnv(null));
      assertEquals((await Deno.readTextFile(file)).trim(), secret);
      assertEquals(((await Deno.stat(file)).mode ?? 0) & 0o777, 0o600);
      assert(/warn/i.test(server.stderr() + server.stdout()), "warns again");
    } finally {
      await server?.kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  ...opts,
  name: "cli: with MB_JWT_SECRET no secret file is created and no warning",
  async fn() {
    const dir = await tempDir();
    let server: Served | undefined;
    try {
      server = await startCli(
        ["--dataDir", dir, "serve", "--port", "0", "--host", HOST],
        childEnv(SECRET),
      );
      const r = await call(server.url, "GET", "/api/v1/health");
      expectStatus(r, 200, "health");
      assertEquals(await exists(`${dir}/.jwt_secret`), false, ".jwt_secret");
      assert(
        !/MB_JWT_SECRET is not set/.test(server.stderr() + server.stdout()),
        server.stderr(),
      );
      assert(!(server.stderr() + server.stdout()).includes(SECRET));
    } finally {
      await server?.kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  ...opts,
  name: "cli: a too short MB_JWT_SECRET → one moonbase: line, exit 2",
  async fn() {
    const dir = await tempDir();
    try {
      const o = await runCli(
        ["--dataDir", dir, "serve", "--port", "0", "--host", HOST],
        { env: childEnv("short-secret") },
      );
      assertErrorExit(o, /MB_JWT_SECRET/);
      assert(!o.stderr.includes("short-secret"), "secret value not echoed");
      assertEquals(await exists(`${dir}/.jwt_secret`), false);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
