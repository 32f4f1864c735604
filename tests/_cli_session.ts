/**
 * Several `moonbase` commands run one after another in one child process
 * (`deno run -A tests/_cli_session.ts`): each command is main.ts's `main()`
 * with its arguments, its console and standard output and error captured,
 * its exit code the value `main()` returns (what main.ts passes to
 * `Deno.exit`). One process pays the module loading once instead of once
 * per command: for commands that end by themselves (`admins`, `migrate`,
 * `types`, usage errors), where cases stand alone. `serve`, and commands
 * that must race each other, keep processes of their own (runCli, startCli
 * in tests/_cli_fixtures.ts).
 *
 * Run as the main module, this file is the child: it reads one JSON array of
 * arguments a line on standard input and answers each with one line
 * (`MARK` then the JSON of the command's code, stdout and stderr).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { childEnv, type Output } from "./_cli_fixtures.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Starts an answer line: what a command prints never does. */
const MARK = "\u0000mb-cli-session\u0000";

/** A child process that runs commands one at a time. */
export interface CliSession {
  /** Runs `moonbase <args>` to completion in the session's process. */
  run(args: string[]): Promise<Output>;
  /** Ends the process. */
  close(): Promise<void>;
}

/**
 * Starts a session whose process has the environment `env` (every command
 * of a session shares it); a command taking longer than `timeoutMs` kills
 * the process (that command then fails, and so does every later one).
 */
export function cliSession(
  env: Record<string, string> = childEnv(),
  timeoutMs = 60_000,
): CliSession {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tests/_cli_session.ts"],
    cwd: ROOT,
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stderr = "";
  const errDone = (async () => {
    for await (const c of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr += c;
    }
  })().catch(() => {});
  let buffered = "";
  let stray = "";
  /** The next answer line (text before it is stray output of the command). */
  const answer = async (): Promise<string | undefined> => {
    while (true) {
      const at = buffered.indexOf(MARK);
      const end = at < 0 ? -1 : buffered.indexOf("\n", at);
      if (end >= 0) {
        stray += buffered.slice(0, at);
        const line = buffered.slice(at + MARK.length, end);
        buffered = buffered.slice(end + 1);
        return line;
      }
      const { value, done } = await lines.read();
      if (done) return undefined;
      buffered += value;
    }
  };
  let queue: Promise<unknown> = Promise.resolve();
  const run = (args: string[]): Promise<Output> => {
    const next = queue.then(async (): Promise<Output> => {
      stray = "";
      const errBefore = stderr.length;
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, timeoutMs);
      try {
        await writer.write(
          new TextEncoder().encode(JSON.stringify(args) + "\n"),
        );
        const line = await answer();
        if (line === undefined) {
          await errDone;
          return {
            code: -1,
            stdout: stray,
            stderr: `the session's process ended: ${stderr.slice(errBefore)}`,
            args,
          };
        }
        const got = JSON.parse(line) as Omit<Output, "args">;
        // Anything the process wrote past the capture (none expected).
        return {
          code: got.code,
          stdout: stray + got.stdout,
          stderr: stderr.slice(errBefore) + got.stderr,
          args,
        };
      } finally {
        clearTimeout(timer);
      }
    });
    queue = next.catch(() => {});
    return next;
  };
  return {
    run,
    async close() {
      await queue;
      await writer.close().catch(() => {});
      const killer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 10_000);
      await child.status;
      clearTimeout(killer);
      await lines.cancel().catch(() => {});
      await errDone;
    },
  };
}

/** The child: runs each command line it reads with main.ts's `main()`. */
async function serve(): Promise<void> {
  const { main } = await import("../main.ts");
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const out = {
    write: Deno.stdout.write.bind(Deno.stdout),
    writeSync: Deno.stdout.writeSync.bind(Deno.stdout),
  };
  const err = {
    write: Deno.stderr.write.bind(Deno.stderr),
    writeSync: Deno.stderr.writeSync.bind(Deno.stderr),
  };
  const saved = {
    log: console.log,
    info: console.info,
    debug: console.debug,
    error: console.error,
    warn: console.warn,
  };
  const text = (args: unknown[]) =>
    args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ") +
    "\n";
  let pending = "";
  for await (
    const chunk of Deno.stdin.readable.pipeThrough(
      new TextDecoderStream(),
    )
  ) {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const args = JSON.parse(pending.slice(0, nl)) as string[];
      pending = pending.slice(nl + 1);
      let stdout = "";
      let stderr = "";
      const toOut = (b: Uint8Array) => {
        stdout += dec.decode(b);
        return b.length;
      };
      const toErr = (b: Uint8Array) => {
        stderr += dec.decode(b);
        return b.length;
      };
      console.log = console.info = console.debug = (...a: unknown[]) =>
        void (stdout += text(a));
      console.error = console.warn = (...a: unknown[]) =>
        void (stderr += text(a));
      Deno.stdout.write = (b) => Promise.resolve(toOut(b));
      Deno.stdout.writeSync = toOut;
      Deno.stderr.write = (b) => Promise.resolve(toErr(b));
      Deno.stderr.writeSync = toErr;
      let code: number;
      try {
        code = await main(args);
      } catch (e) {
        // main() answers every failure itself; this is a bug to show.
        code = 70;
        stderr += `uncaught: ${e instanceof Error ? e.stack : e}\n`;
      } finally {
        Object.assign(console, saved);
        Deno.stdout.write = out.write;
        Deno.stdout.writeSync = out.writeSync;
        Deno.stderr.write = err.write;
        Deno.stderr.writeSync = err.writeSync;
      }
      let bytes = enc.encode(
        MARK + JSON.stringify({ code, stdout, stderr }) + "\n",
      );
      while (bytes.length > 0) bytes = bytes.subarray(await out.write(bytes));
    }
  }
}

if (import.meta.main) await serve();
