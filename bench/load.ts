/**
 * Load generators: wrk when installed, else a Deno loop of keep-alive
 * fetches. Both report requests/s, p50, p99, errors and non-2xx.
 *
 * @module
 */

/** One request shape. */
export interface Target {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Give every request a distinct `X-Forwarded-For` (login under the rate limit). */
  spreadIps?: boolean;
}

/** Figures of one run. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  requests: number;
  tool: string;
  /** Server CPU time per request in µs, when measured. */
  cpuPerRequest?: number;
}

/** True when wrk is on the PATH. */
export function hasWrk(): boolean {
  try {
    return new Deno.Command("wrk", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).outputSync()
      .code !== 127;
  } catch {
    return false; // not installed
  }
}

function luaString(s: string): string {
  return JSON.stringify(s);
}

function luaScript(t: Target): string {
  const lines = [`wrk.method = ${luaString(t.method)}`];
  if (t.body !== undefined) lines.push(`wrk.body = ${luaString(t.body)}`);
  for (const [k, v] of Object.entries(t.headers ?? {})) {
    lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`);
  }
  if (t.spreadIps) {
    // Seeded per run and thread: repeated runs must not reuse the same
    // addresses, or the login rate limit (5 per minute per IP) answers 429.
    lines.push(
      "local threads = 0",
      "function setup(thread) thread:set('tid', threads); threads = threads + 1 end",
      `function init(args) math.randomseed(${
        Math.floor(Math.random() * 1e9)
      } + tid * 7919) end`,
      "local n = 0",
      "request = function()",
      "  n = n + 1",
      '  wrk.headers["X-Forwarded-For"] = "10." .. math.random(0, 250) .. "." .. math.random(0, 250) .. "." .. math.random(1, 250)',
      "  return wrk.format(nil, nil, nil, nil)",
      "end",
    );
  }
  lines.push(
    "done = function(summary, latency, requests)",
    '  io.write(string.format("MBJSON {\\"p50\\":%f,\\"p99\\":%f}\\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000))',
    "end",
  );
  return lines.join("\n") + "\n";
}

async function runWrk(
  base: string,
  t: Target,
  seconds: number,
  connections: number,
): Promise<LoadResult> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, luaScript(t));
  const out = await new Deno.Command("wrk", {
    args: [
      "-t",
      "2",
      "-c",
      String(connections),
      "-d",
      `${seconds}s`,
      "--timeout",
      "30s",
      "-s",
      script,
      base + t.path,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(script);
  const text = new TextDecoder().decode(out.stdout);
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  const lat = JSON.parse(
    /MBJSON (\{.*\})/.exec(text)?.[1] ?? '{"p50":0,"p99":0}',
  );
  const sock =
    /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
      text,
    );
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50: lat.p50,
    p99: lat.p99,
    errors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    requests: num(/(\d+) requests in/),
    tool: "wrk",
  };
}

async function runDeno(
  base: string,
  t: Target,
  seconds: number,
  connections: number,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0, non2xx = 0, n = Math.floor(Math.random() * 1e7);
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const headers: Record<string, string> = { ...t.headers };
      if (t.spreadIps) {
        headers["x-forwarded-for"] = `10.${(n >> 16) % 250}.${(n >> 8) % 250}.${
          n % 249 + 1
        }`;
      }
      n++;
      const t0 = performance.now();
      try {
        const res = await fetch(base + t.path, {
          method: t.method,
          headers,
          body: t.body,
        });
        await res.arrayBuffer();
        if (res.status < 200 || res.status > 299) non2xx++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[
      Math.min(latencies.length - 1, Math.floor(latencies.length * p))
    ] ?? 0;
  return {
    rps: latencies.length / elapsed,
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    non2xx,
    requests: latencies.length,
    tool: "deno",
  };
}

/** Runs load against `base` for `seconds` with `connections` concurrent connections. */
export function runLoad(
  base: string,
  t: Target,
  seconds: number,
  connections = 32,
): Promise<LoadResult> {
  return hasWrk()
    ? runWrk(base, t, seconds, connections)
    : runDeno(base, t, seconds, connections);
}
