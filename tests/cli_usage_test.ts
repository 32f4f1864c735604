/**
 * The `moonbase` command line's usage: `--help` / `-h` and `--version` /
 * `-v` exit 0; every bad invocation prints one `moonbase:` line naming the
 * problem and exits 2 without a stack trace, also when PostgreSQL cannot be
 * reached (and without echoing the connection's password).
 *
 * @module
 */

import { assert, assertEquals } from "./_server.ts";
import denoJson from "../deno.json" with { type: "json" };
import {
  assertErrorExit,
  errorExitProblems,
  opts,
  type Output,
  runCli,
  show,
  tempDir,
} from "./_cli_fixtures.ts";

Deno.test({
  ...opts,
  name: "cli: --help and --version exit 0",
  async fn(t) {
    const dir = await tempDir();
    try {
      const cases: { args: string[]; check: (o: Output) => void }[] = [
        ...[["--help", "--dataDir", dir], ["-h"]].map((args) => ({
          args,
          check: (o: Output) => {
            assertEquals(o.code, 0, show(o));
            assert(/usage/i.test(o.stdout), show(o));
            assert(o.stdout.includes("serve"), show(o));
            assert(o.stdout.includes("admins --add"), show(o));
            assert(o.stdout.includes("MB_JWT_SECRET"), show(o));
          },
        })),
        ...[["--version", "--dataDir", dir], ["-v"]].map((args) => ({
          args,
          check: (o: Output) => {
            assertEquals(o.code, 0, show(o));
            assertEquals(o.stdout.trim(), "0.3.7", show(o));
            assertEquals(o.stdout.trim(), denoJson.version);
          },
        })),
      ];
      // The processes run at once; each row's checks are a step of its own.
      const outs = await Promise.all(cases.map((c) => runCli(c.args)));
      for (const [i, c] of cases.entries()) {
        await t.step(c.args.join(" "), () => c.check(outs[i]));
      }
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  ...opts,
  name: "cli: bad usage prints one moonbase: line and exits 2",
  async fn(t) {
    const dirs: string[] = [];
    try {
      const cases: { args: string[]; mention: RegExp }[] = [
        { args: ["--bogus", "serve"], mention: /bogus/ },
        { args: ["serve", "--nope"], mention: /nope/ },
        { args: ["serve", "--port", "abc"], mention: /port/ },
        { args: ["--port", "abc", "serve"], mention: /port/ },
        { args: ["serve", "--port", "70000"], mention: /port/ },
        { args: ["serve", "--port", "65536"], mention: /port/ },
        { args: ["serve", "--port", "1.5"], mention: /port/ },
        { args: ["serve", "--port"], mention: /port/ },
        { args: ["--database", "PSQL", "serve"], mention: /connection/ },
        { args: ["--database", "MYSQL", "serve"], mention: /database/i },
        {
          args: ["--database", "MYSQL", "--connection", "mysql://x", "serve"],
          mention: /database/i,
        },
        { args: ["frobnicate"], mention: /frobnicate/ },
        { args: ["serve", "extra"], mention: /extra|command/ },
        { args: [], mention: /command/ },
        { args: ["admins"], mention: /admins/ },
        { args: ["admins", "--add", "a@example.com"], mention: /password/ },
        { args: ["serve", "--tokenTtl", "soon"], mention: /tokenTtl/ },
        { args: ["serve", "--poolSize", "0"], mention: /poolSize/ },
        { args: ["serve", "--poolSize", "many"], mention: /poolSize/ },
      ];
      // The processes run at once, each on a data directory of its own; each
      // row's checks are a step of its own.
      const outs = await Promise.all(cases.map(async (c) => {
        const dir = await tempDir();
        dirs.push(dir);
        return await runCli([...c.args, "--dataDir", dir]);
      }));
      for (const [i, c] of cases.entries()) {
        await t.step(`moonbase ${c.args.join(" ")}`, () => {
          const o = outs[i];
          const problems = errorExitProblems(o);
          if (!c.mention.test(o.stderr.split("\n")[0] ?? "")) {
            problems.push(`message does not mention ${c.mention}`);
          }
          if (problems.length) {
            throw new Error(`${problems.join("; ")}\n${show(o)}`);
          }
        });
      }
    } finally {
      for (const d of dirs) {
        await Deno.remove(d, { recursive: true }).catch(() => {});
      }
    }
  },
});

Deno.test({
  ...opts,
  name: "cli: a PostgreSQL connection that fails → one moonbase: line, exit 2",
  async fn() {
    const dir = await tempDir();
    try {
      const url = "postgres://nobody@127.0.0.1:1/x";
      const [serve, admins] = await Promise.all([
        runCli([
          "--database",
          "PSQL",
          "--connection",
          url,
          "--dataDir",
          dir,
          "serve",
          "--port",
          "0",
        ], { timeoutMs: 60_000 }),
        runCli([
          "--database",
          "PSQL",
          "--connection",
          url,
          "--dataDir",
          dir,
          "admins",
          "--ls",
        ], { timeoutMs: 60_000 }),
      ]);
      // Exit 2 with its one line (assertErrorExit) is the proof the CLI gave
      // up by itself: killed at the deadline, it would exit 137 and say
      // nothing.
      assertErrorExit(serve, /postgres|connect/i);
      assertErrorExit(admins, /postgres|connect/i);
      assert(!serve.stdout.includes("listening"), show(serve));
      // The password of a connection URL is never echoed.
      const secretUrl = "postgres://nobody:hunter2-secret@127.0.0.1:1/x";
      const o = await runCli([
        "--database",
        "PSQL",
        "--connection",
        secretUrl,
        "--dataDir",
        dir,
        "serve",
        "--port",
        "0",
      ], { timeoutMs: 30_000 });
      assertErrorExit(o);
      assert(!o.stderr.includes("hunter2"), show(o));
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
