/**
 * Node server processes of the peer benchmark: started on a free port with
 * their output in a log file, ready once an HTTP path answers, stopped with
 * SIGTERM (SIGKILL if they linger). A started server has the shape of
 * bench/procs.ts's `Proc`, so its load runs measure its CPU time alike.
 *
 * @module
 */

import type { Proc } from "../procs.ts";

/** A free TCP port on the loopback address (released at once). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** What to start. */
export interface NodeSpec {
  /** A short name for messages. */
  name: string;
  /** The command and its arguments (the first is the Node binary). */
  cmd: string[];
  cwd: string;
  env: Record<string, string>;
  port: number;
  /** A path that answers (any status) once the server is up. */
  ready: string;
  /** The file that gets the server's stdout and stderr. */
  log: string;
}

/** Every server started and not yet stopped, stopped on exit. */
const running = new Set<Proc>();

/** Starts `spec` and waits (up to 3 minutes) until it answers. */
export async function startNode(spec: NodeSpec): Promise<Proc> {
  // `exec` keeps the pid: the pid watched for CPU time is Node's own.
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$@" >>"$MB_PEER_LOG" 2>&1', "sh", ...spec.cmd],
    cwd: spec.cwd,
    env: { ...spec.env, MB_PEER_LOG: spec.log },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const proc: Proc = { child, port: spec.port };
  running.add(proc);
  let exited = false;
  child.status.then(() => exited = true); // a child's status never rejects
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (exited) break;
    try {
      const res = await fetch(`http://127.0.0.1:${spec.port}${spec.ready}`);
      await res.body?.cancel();
      return proc;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stopNode(proc);
  // No log written: the error below says so with an empty tail.
  const log = await Deno.readTextFile(spec.log).catch(() => "");
  throw new Error(
    `Cannot start ${spec.name}: ${log.split("\n").slice(-20).join("\n")}`,
  );
}

/** Stops a server: SIGTERM, then SIGKILL after 10 s. */
export async function stopNode(p: Proc): Promise<void> {
  running.delete(p);
  try {
    p.child.kill("SIGTERM");
  } catch { /* gone */ }
  const timer = setTimeout(() => {
    try {
      p.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 10_000);
  await p.child.status;
  clearTimeout(timer);
}

/** Stops whatever is still running (on an error or Ctrl-C). */
export function stopAllNow(): void {
  for (const p of running) {
    try {
      p.child.kill("SIGKILL");
    } catch { /* gone */ }
  }
  running.clear();
}
