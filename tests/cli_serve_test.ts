/**
 * `moonbase serve`: `--port 0` with options before and after the command,
 * health, the one-time setup link (its token is the one the setup endpoint
 * wants, and differs per server), SIGTERM exits 0; the JWT secret: a 0600
 * `.jwt_secret` file with a warning when MB_JWT_SECRET is unset (reused on
 * restart), none when it is set, and a too short one refused; a missing or
 * non-directory `--publicDir` refused at start (CLI and createApp); `--dev`
 * colours honour NO_COLOR and non-TTY output; the start banner's "create an
 * admin" command is one the user can run (it is run here and creates the
 * admin in the same database).
 *
 * @module
 */

import nodeAssert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createApp } from "../mod.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { assert, assertEquals, DATABASES } from "./_server.ts";
import { startPostgres } from "./_pg.ts";
import {
  assertErrorExit,
  call,
  childEnv,
  exists,
  expectStatus,
  HOST,
  opts,
  type Output,
  runCli,
  SECRET,
  type Served,
  startCli,
  tempDir,
} from "./_cli_fixtures.ts";
import { cliSession } from "./_cli_session.ts";

Deno.test({
  ...opts,
  name: "cli: serve --port 0 (options before and after serve)",
  async fn() {
    const dirs = [await tempDir(), await tempDir()];
    const servers: Served[] = [];
    try {
      // The two start at once.
      const started = await Promise.allSettled([
        startCli([
          "--dataDir",
          dirs[0],
          "--port",
          "0",
          "--host",
          HOST,
          "serve",
        ]),
        startCli([
          "serve",
          "--port",
          "0",
          "--host",
          HOST,
          "--dataDir",
          dirs[1],
        ]),
      ]);
      for (const r of started) {
        if (r.status === "fulfilled") servers.push(r.value);
      }
      for (const r of started) if (r.status === "rejected") throw r.reason;
      const [before, after] = servers;
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

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dec = new TextDecoder();

/** The children's environment with colours left to the terminal (no NO_COLOR). */
function env(extra: Record<string, string> = {}): Record<string, string> {
  const e = childEnv();
  delete e.NO_COLOR;
  return { ...e, ...extra };
}

/** Runs the CLI to completion with `env()`. */
function run(args: string[]): Promise<Output> {
  return runCli(args, { env: env() });
}

/**
 * Runs `serve` until its stdout matches `until`, then stops it with SIGTERM;
 * returns everything it printed.
 */
async function serveUntil(
  args: string[],
  until: RegExp,
  extraEnv: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "main.ts",
      ...args,
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
    ],
    cwd: ROOT,
    env: env(extraEnv),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stdout = "";
  let stderr = "";
  const errDone = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += c;
    }
  })();
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    for await (const c of child.stdout.pipeThrough(new TextDecoderStream())) {
      stdout += c;
      if (until.test(stdout)) {
        child.kill("SIGTERM");
        until = /(?!)/; // read on until the process exits
      }
    }
    await errDone;
    await child.status;
  } finally {
    clearTimeout(killer);
  }
  return { stdout, stderr };
}

function assertUsageError(
  o: { code: number; stderr: string },
  mention: RegExp,
): void {
  nodeAssert.equal(o.code, 2, o.stderr);
  const first = o.stderr.split("\n")[0];
  nodeAssert.match(first, /^moonbase: /);
  nodeAssert.match(first, mention);
  nodeAssert.ok(!/^\s+at /m.test(o.stderr), "no stack trace");
}

Deno.test({
  ...opts,
  name: "cli: a missing or non-directory --publicDir is refused at start",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mb_cli_" });
    try {
      await Deno.writeTextFile(`${dir}/file.txt`, "x");
      // The three commands run one after another in one process.
      const cli = cliSession(env());
      let missing: Output, file: Output, admins: Output;
      try {
        missing = await cli.run([
          "--dataDir",
          dir,
          "--publicDir",
          `${dir}/nope`,
          "serve",
        ]);
        file = await cli.run([
          "--dataDir",
          dir,
          "--publicDir",
          `${dir}/file.txt`,
          "serve",
        ]);
        admins = await cli.run([
          "--dataDir",
          dir,
          "--publicDir",
          `${dir}/nope`,
          "admins",
          "--ls",
        ]);
      } finally {
        await cli.close();
      }
      assertUsageError(missing, /--publicDir .*nope.*: no such directory/);
      assertUsageError(file, /--publicDir .*file\.txt.*: not a directory/);
      assertUsageError(admins, /--publicDir/);
      // Refused before anything was created in the data directory.
      nodeAssert.deepEqual(
        [...Deno.readDirSync(dir)].map((e) => e.name),
        ["file.txt"],
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...opts,
  name: "createApp: a missing publicDir is a clear error",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mb_cli_" });
    try {
      await nodeAssert.rejects(
        createApp({ dataDir: dir, quiet: true, publicDir: `${dir}/nope` }),
        (err: unknown) =>
          err instanceof MoonbaseError &&
          /^Cannot serve publicDir ".*nope": no such directory$/.test(
            err.message,
          ),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...opts,
  name: "cli: --dev writes no colour codes with NO_COLOR or to a pipe",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mb_cli_" });
    try {
      const cases: Record<string, string>[] = [{ NO_COLOR: "1" }, {}];
      // The two servers run at once, each on a data directory of its own.
      const outs = await Promise.all(cases.map((extra, i) =>
        serveUntil(
          [
            "--dev",
            "--dataDir",
            `${dir}/${i}`,
            "--migrationsDir",
            `${dir}/${i}/migrations`,
          ],
          /INFO\s+\S+ started/,
          extra,
        )
      ));
      for (const [i, extra] of cases.entries()) {
        const o = outs[i];
        nodeAssert.match(
          o.stdout,
          /INFO {2}\S+ started/,
          JSON.stringify(extra),
        );
        nodeAssert.ok(!o.stdout.includes("\x1b["), JSON.stringify(o.stdout));
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

const hasScript = (() => {
  try {
    return Deno.statSync("/usr/bin/script").isFile;
  } catch {
    return false;
  }
})();

Deno.test({
  ...opts,
  name: "logger: pretty lines are coloured on a terminal, unless NO_COLOR",
  ignore: !hasScript,
  async fn() {
    const code =
      `import { Logger } from "./lib/logs/logger.ts"; const l = new Logger(undefined, "info", "pretty"); l.info("hello"); await l.close();`;
    const onTty = async (extra: Record<string, string>) => {
      const out = await new Deno.Command("/usr/bin/script", {
        args: ["-qec", `"${Deno.execPath()}" eval '${code}'`, "/dev/null"],
        cwd: ROOT,
        env: env(extra),
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).output();
      return dec.decode(out.stdout);
    };
    const [plain, coloured] = await Promise.all([
      onTty({ NO_COLOR: "1" }),
      onTty({}),
    ]);
    nodeAssert.ok(
      coloured.includes("\x1b[32mINFO \x1b[0m "),
      JSON.stringify(coloured),
    );
    nodeAssert.match(plain, /INFO {2}\S+ hello/);
    nodeAssert.ok(!plain.includes("\x1b[3"), JSON.stringify(plain));
  },
});

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `cli: the banner's admins command runs as printed [${db}]`,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "mb_cli_" });
      try {
        const dbArgs = db === "postgres"
          ? [
            "--database",
            "PSQL",
            "--connection",
            await (await startPostgres()).createDatabase(),
          ]
          : [];
        const args = ["--dataDir", dir, ...dbArgs];
        const served = await serveUntil(args, /\n {2}or: .*\n/);
        const hint = served.stdout.match(/\n {2}or: (.*)\n/)?.[1] ?? "";
        nodeAssert.doesNotMatch(hint, /^moonbase /, hint);
        nodeAssert.match(
          hint,
          /^deno task moonbase --dataDir \S+ .*admins --add <email> <password>$/,
        );
        if (db === "postgres") nodeAssert.match(hint, /--connection <url>/);
        const command = hint
          .replace("<url>", `'${dbArgs[3]}'`)
          .replace("<email>", "hint@example.com")
          .replace("<password>", "'hint-password-1'");
        const out = await new Deno.Command("bash", {
          args: ["-c", command],
          cwd: ROOT,
          env: env(),
          clearEnv: true,
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(60_000),
        }).output();
        nodeAssert.equal(out.code, 0, dec.decode(out.stderr));
        const ls = await run([...args, "admins", "--ls"]);
        nodeAssert.equal(ls.code, 0, ls.stderr);
        nodeAssert.match(ls.stdout, /hint@example\.com/);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
