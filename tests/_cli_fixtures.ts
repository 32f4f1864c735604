/**
 * Fixtures of the command-line tests: the `moonbase` CLI run as a
 * subprocess (`deno run -A main.ts`), to completion or as a running `serve`
 * process, plain HTTP calls to it, the checks of an error exit, and data
 * directories that already hold admins.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { seedUser, startServer } from "./_server.ts";
import { pause, poll } from "./_wait.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const SECRET = "cli-test-secret-0123456789-abcdefghijklmnop";
export const HOST = "127.0.0.1";

/** Environment of the children: ours, NO_COLOR, and MB_JWT_SECRET as asked. */
export function childEnv(
  secret: string | null = SECRET,
): Record<string, string> {
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

export interface Output {
  code: number;
  stdout: string;
  stderr: string;
  args: string[];
}

/** Runs the CLI to completion (killed after `timeoutMs`). */
export async function runCli(
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

export function show(o: Output): string {
  return `moonbase ${o.args.join(" ")} → exit ${o.code}\n--- stdout\n${
    o.stdout.slice(0, 1500)
  }\n--- stderr\n${o.stderr.slice(0, 1500)}`;
}

/** The checks for an error exit: code 2, one `moonbase:` line first, no stack. */
export function errorExitProblems(o: Output): string[] {
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

export function assertErrorExit(o: Output, mention?: RegExp): void {
  const problems = errorExitProblems(o);
  if (mention && !mention.test(o.stderr.split("\n")[0] ?? "")) {
    problems.push(`message does not mention ${mention}`);
  }
  if (problems.length) {
    throw new Error(`${problems.join("; ")}\n${show(o)}`);
  }
}

export async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "mb_cli_" });
}

/** A running `serve` process. */
export interface Served {
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

function collect(
  stream: ReadableStream<Uint8Array<ArrayBuffer>>,
  onText: () => void,
): {
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
export async function startCli(
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
  await poll("the server to answer", async () => {
    try {
      const res = await fetch(`http://${HOST}:${port}/api/v1/health`);
      await res.body?.cancel();
      return true;
    } catch {
      return false; // not listening yet
    }
  }, { every: 100 }).catch(() => {/* the callers' requests say more */});
  let seen = -1;
  while (seen !== out.text().length + err.text().length) {
    seen = out.text().length + err.text().length;
    await pause(150);
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

export interface Reply {
  status: number;
  // deno-lint-ignore no-explicit-any
  data: any;
  error: string;
  text: string;
}

export async function call(
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

export function expectStatus(r: Reply, status: number, what: string): void {
  if (r.status !== status) {
    throw new Error(
      `${what}: expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`,
    );
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Options of every CLI test (child processes outlive the checks' ops). */
export const opts = { sanitizeOps: false, sanitizeResources: false };

/** `--dataDir <dir>`, and the dir is removed by `cleanup()`. */
export async function dataDir(): Promise<
  { dir: string; d: string[]; cleanup(): Promise<void> }
> {
  const dir = await tempDir();
  return {
    dir,
    d: ["--dataDir", dir],
    cleanup: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
}

/**
 * Writes admins (email → password) into a data directory directly, as
 * `admins --add` would (that command itself is tested on its own); with a
 * `connection`, into that PostgreSQL database instead.
 */
export async function seedAdmins(
  dir: string,
  admins: Record<string, string>,
  connection?: string,
): Promise<void> {
  const s = await startServer(
    connection ? "postgres" : "sqlite",
    { dataDir: dir, ...(connection ? { connection } : {}) },
  );
  try {
    for (const [email, password] of Object.entries(admins)) {
      await seedUser(s, "mb_admins", { email }, password);
    }
  } finally {
    await s.close();
  }
}
