/**
 * The `moonbase` command line, run as a subprocess (`deno run -A main.ts`):
 * help/version, usage errors (one `moonbase:` line, exit 2, no stack trace),
 * `serve` (port, setup link, health, SIGTERM), `admins --add/--ls/--rm`,
 * restart persistence on SQLite and PostgreSQL, the JWT secret file.
 */

import { fileURLToPath } from "node:url";
import { assert, assertEquals } from "./_server.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import denoJson from "../deno.json" with { type: "json" };

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SECRET = "cli-test-secret-0123456789-abcdefghijklmnop";
const HOST = "127.0.0.1";

/** Environment of the children: ours, NO_COLOR, and MB_JWT_SECRET as asked. */
function childEnv(secret: string | null = SECRET): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.MB_JWT_SECRET;
  env.NO_COLOR = "1";
  if (secret !== null) env.MB_JWT_SECRET = secret;
  return env;
}

function command(args: string[], env: Record<string, string>): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts", ...args],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

interface Output {
  code: number;
  stdout: string;
  stderr: string;
  args: string[];
}

/** Runs the CLI to completion (killed after `timeoutMs`). */
async function runCli(
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Output> {
  const child = command(args, opts.env ?? childEnv()).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, opts.timeoutMs ?? 60_000);
  try {
    const out = await child.output();
    const dec = new TextDecoder();
    return {
      code: out.code,
      stdout: dec.decode(out.stdout),
      stderr: dec.decode(out.stderr),
      args,
    };
  } finally {
    clearTimeout(timer);
  }
}

function show(o: Output): string {
  return `moonbase ${o.args.join(" ")} → exit ${o.code}\n--- stdout\n${
    o.stdout.slice(0, 1500)
  }\n--- stderr\n${o.stderr.slice(0, 1500)}`;
}

/** The checks for an error exit: code 2, one `moonbase:` line first, no stack. */
function errorExitProblems(o: Output): string[] {
  const problems: string[] = [];
  if (o.code !== 2) problems.push(`exit code ${o.code}, expected 2`);
  const lines = o.stderr.split("\n");
  const first = lines.find((l) => l.trim() !== "") ?? "";
  if (!first.startsWith("moonbase: ")) {
    problems.push(`first stderr line does not start "moonbase: ": ${first}`);
  }
  if (first.length > 300) problems.push("the message line is very long");
  const count = lines.filter((l) => l.startsWith("moonbase:")).length;
  if (count !== 1) problems.push(`${count} lines start "moonbase:"`);
  if (lines.some((l) => /^\s+at /.test(l))) problems.push("stack trace");
  if (/\b(TypeError|ReferenceError|Uncaught)\b/.test(o.stderr)) {
    problems.push("uncaught error text");
  }
  return problems;
}

function assertErrorExit(o: Output, mention?: RegExp): void {
  const problems = errorExitProblems(o);
  if (mention && !mention.test(o.stderr.split("\n")[0] ?? "")) {
    problems.push(`message does not mention ${mention}`);
  }
  if (problems.length) {
    throw new Error(`${problems.join("; ")}\n${show(o)}`);
  }
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "mb_cli_" });
}

/** A running `serve` process. */
interface Served {
  proc: Deno.ChildProcess;
  port: number;
  url: string;
  stdout(): string;
  stderr(): string;
  /** Sends a signal and waits for the exit (SIGKILL after `ms`). */
  stop(
    signal?: Deno.Signal,
    ms?: number,
  ): Promise<{ code: number; timedOut: boolean }>;
  kill(): Promise<void>;
}

function collect(stream: ReadableStream<Uint8Array>, onText: () => void): {
  text(): string;
  done: Promise<void>;
} {
  let buf = "";
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      onText();
    }
  })().catch(() => {});
  return { text: () => buf, done };
}

/** Starts `moonbase <args>` (which must include serve) and waits for the port. */
async function startCli(
  args: string[],
  env: Record<string, string> = childEnv(),
): Promise<Served> {
  const proc = command(args, env).spawn();
  let wake = () => {};
  let exited = false;
  const status = proc.status.then((s) => {
    exited = true;
    wake();
    return s;
  });
  const out = collect(proc.stdout, () => wake());
  const err = collect(proc.stderr, () => wake());
  const re = /listening on (http:\/\/\S+?):(\d+)\b/;
  const deadline = Date.now() + 60_000;
  let m: RegExpExecArray | null = null;
  while (!(m = re.exec(out.text())) && !exited && Date.now() < deadline) {
    await new Promise<void>((r) => {
      wake = r;
      setTimeout(r, 200);
    });
  }
  const kill = async () => {
    try {
      proc.kill("SIGKILL");
    } catch { /* already gone */ }
    await status;
    await Promise.all([out.done, err.done]);
  };
  if (!m) {
    await kill();
    throw new Error(
      `moonbase ${
        args.join(" ")
      } did not print "listening on":\n--- stdout\n${out.text()}\n--- stderr\n${err.text()}`,
    );
  }
  const port = Number(m[2]);
  // The lines printed after "listening on" (setup link) come with it; wait
  // until the server answers and the output has settled.
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`http://${HOST}:${port}/api/v1/health`);
      await res.body?.cancel();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let seen = -1;
  while (seen !== out.text().length + err.text().length) {
    seen = out.text().length + err.text().length;
    await new Promise((r) => setTimeout(r, 150));
  }
  return {
    proc,
    port,
    url: `http://${HOST}:${port}`,
    stdout: out.text,
    stderr: err.text,
    kill,
    async stop(signal: Deno.Signal = "SIGTERM", ms = 10_000) {
      try {
        proc.kill(signal);
      } catch { /* already gone */ }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          proc.kill("SIGKILL");
        } catch { /* gone */ }
      }, ms);
      const s = await status;
      clearTimeout(timer);
      await Promise.all([out.done, err.done]);
      return { code: s.code, timedOut };
    },
  };
}

interface Reply {
  status: number;
  // deno-lint-ignore no-explicit-any
  data: any;
  error: string;
  text: string;
}

async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; token?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const res = await fetch(base + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let parsed: { data?: unknown; error?: string } | null = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch { /* not JSON */ }
  return {
    status: res.status,
    data: parsed?.data,
    error: parsed?.error ?? "",
    text,
  };
}

function expectStatus(r: Reply, status: number, what: string): void {
  if (r.status !== status) {
    throw new Error(
      `${what}: expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`,
    );
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

const opts = { sanitizeOps: false, sanitizeResources: false };

// ---------------------------------------------------------------- help

Deno.test({
  ...opts,
  name: "cli: --help and --version exit 0",
  async fn() {
    const dir = await tempDir();
    try {
      const [help, h, version, v] = await Promise.all([
        runCli(["--help", "--dataDir", dir]),
        runCli(["-h"]),
        runCli(["--version", "--dataDir", dir]),
        runCli(["-v"]),
      ]);
      for (const o of [help, h]) {
        assertEquals(o.code, 0, show(o));
        assert(/usage/i.test(o.stdout), show(o));
        assert(o.stdout.includes("serve"), show(o));
        assert(o.stdout.includes("admins --add"), show(o));
        assert(o.stdout.includes("MB_JWT_SECRET"), show(o));
      }
      for (const o of [version, v]) {
        assertEquals(o.code, 0, show(o));
        assertEquals(o.stdout.trim(), "0.3.7", show(o));
        assertEquals(o.stdout.trim(), denoJson.version);
      }
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

// ---------------------------------------------------------- usage errors

Deno.test({
  ...opts,
  name: "cli: bad usage prints one moonbase: line and exits 2",
  async fn() {
    const dirs: string[] = [];
    try {
      const cases: { args: string[]; mention?: RegExp }[] = [
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
      const runs = await Promise.all(cases.map(async (c) => {
        const dir = await tempDir();
        dirs.push(dir);
        return { c, o: await runCli([...c.args, "--dataDir", dir]) };
      }));
      const failures: string[] = [];
      for (const { c, o } of runs) {
        const problems = errorExitProblems(o);
        if (c.mention && !c.mention.test(o.stderr.split("\n")[0] ?? "")) {
          problems.push(`message does not mention ${c.mention}`);
        }
        if (problems.length) {
          failures.push(`${problems.join("; ")}\n${show(o)}`);
        }
      }
      if (failures.length) throw new Error(failures.join("\n\n"));
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
      const started = Date.now();
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
        ], { timeoutMs: 30_000 }),
        runCli([
          "--database",
          "PSQL",
          "--connection",
          url,
          "--dataDir",
          dir,
          "admins",
          "--ls",
        ], { timeoutMs: 30_000 }),
      ]);
      assert(Date.now() - started < 30_000, "gave up in time");
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

// ---------------------------------------------------------------- serve

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

// --------------------------------------------------------------- admins

Deno.test({
  ...opts,
  name: "cli: admins --add/--ls/--rm and login on the same dataDir",
  async fn(t) {
    const dir = await tempDir();
    const d = ["--dataDir", dir];
    let server: Served | undefined;
    try {
      await t.step("--ls on a fresh dataDir", async () => {
        const o = await runCli(["admins", "--ls", ...d]);
        assertEquals(o.code, 0, show(o));
        assert(!o.stdout.includes("@"), show(o));
      });
      await t.step("--add with a bad email: exit 2, no admin", async () => {
        for (const email of ["not-an-email", "a@", "@b.com", ""]) {
          const o = await runCli([
            "admins",
            "--add",
            email,
            "password-123",
            ...d,
          ]);
          assertErrorExit(o, /email/i);
        }
      });
      await t.step(
        "--add with a 7-character password: exit 2, no admin",
        async () => {
          const o = await runCli([
            "admins",
            "--add",
            "short@example.com",
            "1234567",
            ...d,
          ]);
          assertErrorExit(o, /password/i);
          const ls = await runCli(["admins", "--ls", ...d]);
          assertEquals(ls.code, 0, show(ls));
          assert(!ls.stdout.includes("@"), `no admin expected:\n${show(ls)}`);
        },
      );
      await t.step("--add creates an admin; --ls lists it", async () => {
        const o = await runCli([
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
        const ls = await runCli(["admins", "--ls", ...d]);
        assertEquals(ls.code, 0, show(ls));
        assert(ls.stdout.includes("first@example.com"), show(ls));
        assert(!ls.stdout.includes("scrypt$"), "no hash in the listing");
      });
      await t.step("--add of an existing email: exit 2", async () => {
        const o = await runCli([
          "admins",
          "--add",
          "first@example.com",
          "other-password-1",
          ...d,
        ]);
        assertErrorExit(o);
      });
      await t.step(
        "the admin logs in on a server on the same dataDir",
        async () => {
          server = await startCli([
            ...d,
            "serve",
            "--port",
            "0",
            "--host",
            HOST,
          ]);
          assert(
            !server.stdout().includes("/mb/setup?token="),
            `no setup link once an admin exists:\n${server.stdout()}`,
          );
          let r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
            body: {
              identity: "first@example.com",
              password: "first-password-1",
            },
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
        },
      );
      await t.step("--rm refuses to remove the last admin", async () => {
        const o = await runCli(["admins", "--rm", "first@example.com", ...d]);
        assertErrorExit(o, /last/i);
        const ls = await runCli(["admins", "--ls", ...d]);
        assert(ls.stdout.includes("first@example.com"), show(ls));
      });
      await t.step("--rm of an unknown admin: exit 2", async () => {
        const o = await runCli(["admins", "--rm", "nobody@example.com", ...d]);
        assertErrorExit(o);
      });
      await t.step("--rm works when there are two", async () => {
        let o = await runCli([
          "admins",
          "--add",
          "second@example.com",
          "second-password-1",
          ...d,
        ]);
        assertEquals(o.code, 0, show(o));
        o = await runCli(["admins", "--rm", "first@example.com", ...d]);
        assertEquals(o.code, 0, show(o));
        const ls = await runCli(["admins", "--ls", ...d]);
        assertEquals(ls.code, 0, show(ls));
        assert(!ls.stdout.includes("first@example.com"), show(ls));
        assert(ls.stdout.includes("second@example.com"), show(ls));
        o = await runCli(["admins", "--rm", "second@example.com", ...d]);
        assertErrorExit(o, /last/i);
      });
      await t.step("the removed admin can no longer log in", async () => {
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
      });
    } finally {
      await server?.kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

// ---------------------------------------------------- restart persistence

async function persistence(
  t: Deno.TestContext,
  dbArgs: string[],
): Promise<void> {
  const dir = await tempDir();
  const args = [
    ...dbArgs,
    "--dataDir",
    dir,
    "serve",
    "--port",
    "0",
    "--host",
    HOST,
  ];
  let server: Served | undefined;
  try {
    let token = "";
    let recordId = "";
    await t.step(
      "first run: admin via the setup link, entity, record",
      async () => {
        server = await startCli(args);
        const setup = /setup\?token=(\S+)/.exec(server.stdout());
        assert(setup, `no setup link:\n${server.stdout()}`);
        let r = await call(server.url, "POST", "/api/v1/sys/admins/setup", {
          token: setup[1],
          body: { email: "boss@example.com", password: "boss-password-1" },
        });
        expectStatus(r, 201, "setup");
        token = r.data.token;
        r = await call(server.url, "POST", "/api/v1/schemas", {
          token,
          body: {
            name: "notes",
            type: "base",
            fields: [
              { name: "title", type: "string", required: true },
              { name: "n", type: "int" },
            ],
            rules: {
              list: { mode: "public", expr: "" },
              get: { mode: "public", expr: "" },
              add: { mode: "", expr: "" },
              update: { mode: "", expr: "" },
              delete: { mode: "", expr: "" },
            },
          },
        });
        expectStatus(r, 201, "create entity");
        r = await call(server.url, "POST", "/api/v1/entities/notes", {
          token,
          body: { title: "survives restarts", n: 42 },
        });
        expectStatus(r, 201, "create record");
        recordId = r.data.id;
      },
    );
    await t.step(
      "SIGTERM lets in-flight requests finish and exits 0",
      async () => {
        const s = server!;
        // Logins spend ~100 ms in scrypt: they are in the handler when the
        // signal comes, and must still be answered.
        const logins = [1, 2, 3].map(() =>
          fetch(`${s.url}/api/v1/sys/admins/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              identity: "boss@example.com",
              password: "boss-password-1",
            }),
          }).then(async (res) => ({
            status: res.status,
            text: await res.text(),
          }))
            .catch((err) => ({ status: 0, text: String(err) }))
        );
        await new Promise((r) => setTimeout(r, 40));
        const stopped = await s.stop("SIGTERM", 10_000);
        server = undefined;
        const results = await Promise.all(logins);
        assertEquals(stopped, { code: 0, timedOut: false }, s.stderr());
        for (const res of results) {
          assertEquals(
            res.status,
            200,
            `in-flight login during shutdown: ${res.text.slice(0, 300)}`,
          );
        }
        assert(
          !s.stderr().split("\n").some((l) => /^\s+at /.test(l)),
          s.stderr(),
        );
        // The port is closed afterwards.
        const after = await fetch(`${s.url}/api/v1/health`).then(
          async (r) => (await r.body?.cancel(), r.status),
          () => 0,
        );
        assertEquals(after, 0, "nothing listens after the exit");
      },
    );
    await t.step(
      "second run: entity, records and token are still there",
      async () => {
        server = await startCli(args);
        assert(
          !server.stdout().includes("setup?token="),
          `no setup link once an admin exists:\n${server.stdout()}`,
        );
        let r = await call(server.url, "GET", "/api/v1/schemas/notes", {
          token,
        });
        expectStatus(r, 200, "entity after restart (old token)");
        assertEquals(r.data.name, "notes");
        r = await call(server.url, "GET", `/api/v1/entities/notes/${recordId}`);
        expectStatus(r, 200, "record after restart");
        assertEquals(r.data.title, "survives restarts");
        assertEquals(r.data.n, 42);
        r = await call(server.url, "GET", "/api/v1/entities/notes?count=true");
        expectStatus(r, 200, "list after restart");
        assertEquals(r.data.total, 1);
        r = await call(server.url, "POST", "/api/v1/sys/admins/login", {
          body: { identity: "boss@example.com", password: "boss-password-1" },
        });
        expectStatus(r, 200, "admin login after restart");
        const stopped = await server.stop("SIGINT");
        server = undefined;
        assertEquals(stopped, { code: 0, timedOut: false });
      },
    );
  } finally {
    await server?.kill();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test({
  ...opts,
  name: "cli: restart persistence [sqlite]",
  fn: (t) => persistence(t, []),
});

Deno.test({
  ...opts,
  name: "cli: restart persistence [postgres]",
  ignore: !hasPostgres() ||
    (Deno.env.get("MB_TEST_DB") ?? "postgres") !== "postgres",
  async fn(t) {
    const url = await (await startPostgres()).createDatabase();
    await persistence(t, ["--database", "PSQL", "--connection", url]);
  },
});

Deno.test({
  ...opts,
  name: "cli: SIGTERM during a streamed request body still answers it",
  async fn() {
    const dir = await tempDir();
    const d = ["--dataDir", dir];
    let server: Served | undefined;
    try {
      const o = await runCli([
        "admins",
        "--add",
        "up@example.com",
        "up-password-1",
        ...d,
      ]);
      assertEquals(o.code, 0, show(o));
      server = await startCli([...d, "serve", "--port", "0", "--host", HOST]);
      const s = server;
      let r = await call(s.url, "POST", "/api/v1/sys/admins/login", {
        body: { identity: "up@example.com", password: "up-password-1" },
      });
      expectStatus(r, 200, "login");
      const token = r.data.token;
      r = await call(s.url, "POST", "/api/v1/schemas", {
        token,
        body: {
          name: "notes",
          type: "base",
          fields: [{ name: "title", type: "string" }],
        },
      });
      expectStatus(r, 201, "create entity");
      // A create whose body arrives slowly: the request is in flight when
      // the signal comes; graceful shutdown must still answer it.
      const enc = new TextEncoder();
      let push!: (text: string | null) => void;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          push = (text) =>
            text === null ? c.close() : c.enqueue(enc.encode(text));
        },
      });
      const pending = fetch(`${s.url}/api/v1/entities/notes`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
        },
        body,
      }).then(async (res) => ({ status: res.status, text: await res.text() }))
        .catch((err) => ({ status: 0, text: String(err) }));
      push('{"title": "in fl');
      await new Promise((r) => setTimeout(r, 400));
      const stopping = s.stop("SIGTERM", 15_000);
      await new Promise((r) => setTimeout(r, 400));
      push('ight"}');
      push(null);
      const res = await pending;
      const stopped = await stopping;
      server = undefined;
      assertEquals(stopped, { code: 0, timedOut: false }, s.stderr());
      assertEquals(
        res.status,
        201,
        `in-flight streamed create during shutdown: ${
          res.text.slice(0, 300)
        }\n--- server stderr\n${s.stderr().slice(-1500)}`,
      );
      // It was stored.
      server = await startCli([...d, "serve", "--port", "0", "--host", HOST]);
      r = await call(server.url, "GET", "/api/v1/entities/notes?count=true", {
        token,
      });
      expectStatus(r, 200, "list after restart");
      assertEquals(r.data.total, 1);
    } finally {
      await server?.kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
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
