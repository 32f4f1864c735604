/**
 * CLI leftovers of the hardening issue: a missing `--publicDir` is refused at
 * start (CLI and createApp), `--dev` colours honour NO_COLOR and non-TTY
 * output, and the start banner's "create an admin" command is one the user
 * can actually run (it is run here and creates the admin in the same
 * database).
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createApp } from "../mod.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { DATABASES } from "./_server.ts";
import { startPostgres } from "./_pg.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SECRET = "cli-leftovers-secret-0123456789-abcdefghij";
const opts = { sanitizeOps: false, sanitizeResources: false };
const dec = new TextDecoder();

function env(extra: Record<string, string> = {}): Record<string, string> {
  const e = Deno.env.toObject();
  delete e.NO_COLOR;
  return { ...e, MB_JWT_SECRET: SECRET, ...extra };
}

async function run(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", ...args],
    cwd: ROOT,
    env: env(extraEnv),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  return {
    code: out.code,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
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
  assert.equal(o.code, 2, o.stderr);
  const first = o.stderr.split("\n")[0];
  assert.match(first, /^moonbase: /);
  assert.match(first, mention);
  assert.ok(!/^\s+at /m.test(o.stderr), "no stack trace");
}

Deno.test({
  ...opts,
  name: "cli: a missing or non-directory --publicDir is refused at start",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "mb_left_" });
    try {
      await Deno.writeTextFile(`${dir}/file.txt`, "x");
      const [missing, file, admins] = await Promise.all([
        run(["--dataDir", dir, "--publicDir", `${dir}/nope`, "serve"]),
        run(["--dataDir", dir, "--publicDir", `${dir}/file.txt`, "serve"]),
        run(["--dataDir", dir, "--publicDir", `${dir}/nope`, "admins", "--ls"]),
      ]);
      assertUsageError(missing, /--publicDir .*nope.*: no such directory/);
      assertUsageError(file, /--publicDir .*file\.txt.*: not a directory/);
      assertUsageError(admins, /--publicDir/);
      // Refused before anything was created in the data directory.
      assert.deepEqual(
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
    const dir = await Deno.makeTempDir({ prefix: "mb_left_" });
    try {
      await assert.rejects(
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
    const dir = await Deno.makeTempDir({ prefix: "mb_left_" });
    try {
      const cases: Record<string, string>[] = [{ NO_COLOR: "1" }, {}];
      for (const extra of cases) {
        const o = await serveUntil(
          ["--dev", "--dataDir", dir],
          /INFO\s+\S+ started/,
          extra,
        );
        assert.match(o.stdout, /INFO {2}\S+ started/, JSON.stringify(extra));
        assert.ok(!o.stdout.includes("\x1b["), JSON.stringify(o.stdout));
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
    assert.ok(
      coloured.includes("\x1b[32mINFO \x1b[0m "),
      JSON.stringify(coloured),
    );
    assert.match(plain, /INFO {2}\S+ hello/);
    assert.ok(!plain.includes("\x1b[3"), JSON.stringify(plain));
  },
});

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `cli: the banner's admins command runs as printed [${db}]`,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "mb_left_" });
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
        assert.doesNotMatch(hint, /^moonbase /, hint);
        assert.match(
          hint,
          /^deno task moonbase --dataDir \S+ .*admins --add <email> <password>$/,
        );
        if (db === "postgres") assert.match(hint, /--connection <url>/);
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
        assert.equal(out.code, 0, dec.decode(out.stderr));
        const ls = await run([...args, "admins", "--ls"]);
        assert.equal(ls.code, 0, ls.stderr);
        assert.match(ls.stdout, /hint@example\.com/);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
