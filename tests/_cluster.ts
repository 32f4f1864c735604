/**
 * N Moonbase instances behind a real reverse proxy: Debian's nginx,
 * round-robin over the instances, in front of `moonbase serve` processes
 * (`deno run main.ts`, so an instance can be killed with SIGKILL and started
 * again) on one PostgreSQL database (tests/_pg.ts) and one S3 bucket
 * (tests/_s3.ts, Ceph's radosgw), all on loopback.
 *
 * Used by tests/cluster_test.ts and by `deno task cluster`
 * (_tools/cluster.ts), which starts one and waits for Ctrl-C.
 * docs/operations/deployment.md carries {@link nginxSite}'s text for its
 * example ports (tests/cluster_test.ts checks they are the same), so the
 * configuration the docs recommend is the one tested here.
 *
 * A watchdog outside the process (a shell in a session of its own, as in
 * tests/_pg.ts) stops nginx and kills every instance once the process is
 * gone, however it ends, and removes the cluster's directory.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { hasPostgres, startPostgres } from "./_pg.ts";
import { hasS3, S3_KEY, type S3Peer, startS3 } from "./_s3.ts";
import { poll } from "./_wait.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NGINX = Deno.env.get("MB_NGINX") ?? "/usr/sbin/nginx";

/** The token secret every instance shares (as `MB_JWT_SECRET`). */
export const CLUSTER_JWT_SECRET = "cluster-secret-0123456789-abcdefghijklmnop";

/** The admin the harness creates (through the first-admin setup route). */
export const CLUSTER_ADMIN = {
  email: "admin@example.com",
  password: "admin-password-123",
};

/** True when nginx, PostgreSQL and Ceph's S3 gateway are all installed. */
export function hasCluster(): boolean {
  return hasNginx() && hasPostgres() && hasS3();
}

/** True when the nginx binary exists. */
export function hasNginx(): boolean {
  try {
    return Deno.statSync(NGINX).isFile;
  } catch {
    return false;
  }
}

/**
 * The nginx site that puts Moonbase instances behind one address: the
 * `map`, `upstream` and `server` blocks of the `http` context (a file in
 * `/etc/nginx/conf.d/` on Debian). `upstreams` are `host:port` of the
 * instances, `listen` what nginx listens on (one `listen` line each).
 */
export function nginxSite(upstreams: string[], listen: string[]): string {
  const servers = upstreams.map((u) =>
    `    server ${u} max_fails=1 fail_timeout=5s;`
  ).join("\n");
  return `# Moonbase behind nginx: round-robin over the instances.
# WebSocket upgrades pass through; other requests keep their
# connection to an instance open for the next one.
map $http_upgrade $connection_upgrade {
    default upgrade;
    ""      "";
}

upstream moonbase {
${servers}
    keepalive 32;
    # Below Moonbase's --idleTimeout (30 s): nginx must never reuse a
    # connection the instance is closing.
    keepalive_timeout 20s;
}

server {
${listen.map((l) => `    listen ${l};`).join("\n")}
    # At least --maxUploadSize (10 MiB) plus the multipart framing;
    # Moonbase answers 413 itself past its limits.
    client_max_body_size 11m;

    location / {
        proxy_pass http://moonbase;
        proxy_http_version 1.1;
        proxy_set_header Host $host;
        # Moonbase (--trustProxy) takes the last hop: the client nginx saw.
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        # Stream both ways: SSE events, downloads and uploads as they come.
        proxy_buffering off;
        proxy_request_buffering off;
        # Realtime streams stay open for hours (SSE sends a ping every 15 s).
        proxy_read_timeout 1h;
        proxy_send_timeout 1h;
        # A request no instance began (refused connection, an instance
        # stopping answers 503) goes to the next one; POST and PATCH only
        # when the first never received them.
        proxy_next_upstream error timeout http_503;
        proxy_next_upstream_tries 2;
    }
}
`;
}

/** The whole nginx.conf of the harness: its paths, then the site. */
function nginxConf(dir: string, site: string): string {
  return `daemon off;
worker_processes 1;
pid ${dir}/run/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events {
    worker_connections 1024;
}
http {
    client_body_temp_path ${dir}/nginx/body;
    proxy_temp_path ${dir}/nginx/proxy;
    fastcgi_temp_path ${dir}/nginx/fastcgi;
    uwsgi_temp_path ${dir}/nginx/uwsgi;
    scgi_temp_path ${dir}/nginx/scgi;
    log_format upstream '$remote_addr "$request" $status '
        'upstream=$upstream_addr upstream_status=$upstream_status '
        'time=$request_time';
    access_log ${dir}/nginx-access.log upstream;
    # The harness's own: which instance answered (the tests read it).
    add_header X-Upstream $upstream_addr always;
${site.replace(/^(?=.)/gm, "    ")}}
`;
}

/** One Moonbase process of the cluster. */
export interface Instance {
  /** 0, 1, 2… */
  readonly index: number;
  readonly port: number;
  /** `http://127.0.0.1:<port>`: the instance itself, not through nginx. */
  readonly url: string;
  /** `127.0.0.1:<port>`, as nginx's `X-Upstream` names it. */
  readonly address: string;
  /** True while the process runs. */
  running(): boolean;
  /** Kills the process at once (SIGKILL) and waits for it to be gone. */
  kill(): Promise<void>;
  /** Starts it again (same port, data dir and options); resolves once healthy. */
  start(): Promise<void>;
  /** What the process printed (stdout and stderr), from its log file. */
  output(): Promise<string>;
}

/** A running cluster. */
export interface Cluster {
  /** `http://127.0.0.1:<port>` of nginx: what clients use. */
  readonly url: string;
  /**
   * `http://[::1]:<port>`: nginx on IPv6 loopback, where the machine has
   * it — a client of another address than `url`'s.
   */
  readonly url6: string | undefined;
  readonly instances: readonly Instance[];
  /** The PostgreSQL database every instance serves. */
  readonly connection: string;
  /** The S3 gateway and the bucket of the cluster's files. */
  readonly s3: S3Peer;
  readonly bucket: string;
  /** The `--files` URL every instance runs with. */
  readonly files: string;
  /** A token of {@link CLUSTER_ADMIN}. */
  readonly adminToken: string;
  /** The cluster's directory: logs, nginx.conf, data dirs. */
  readonly dir: string;
  /** The instance nginx sent a response's request to (its `X-Upstream`). */
  instanceOf(res: { headers: Headers }): Instance | undefined;
  /** Stops nginx and every instance, and removes the directory. */
  close(): Promise<void>;
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Instances (default 3). */
  instances?: number;
  /** nginx's port (default: a free one). */
  port?: number;
  /** Extra options of every instance's `serve`. */
  serveArgs?: string[];
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function canListen(hostname: string, port: number): boolean {
  try {
    Deno.listen({ hostname, port }).close();
    return true;
  } catch {
    return false;
  }
}

const q = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`;

/**
 * Once this process is gone: stop nginx (TERM: its master ends its
 * workers), kill every instance whose pid file is in `dir/run`, remove `dir`.
 */
async function watchdog(dir: string): Promise<void> {
  const script = `while kill -0 ${Deno.pid} 2>/dev/null; do sleep 1; done; ` +
    `[ -f ${q(dir)}/run/nginx.pid ] && kill -TERM "$(cat ${
      q(dir)
    }/run/nginx.pid)" 2>/dev/null; ` +
    `for f in ${
      q(dir)
    }/run/moonbase-*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; ` +
    `sleep 1; rm -rf ${q(dir)}`;
  const out = await new Deno.Command("setsid", {
    args: ["-f", "sh", "-c", script],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (!out.success) throw new Error("Cannot start the cluster's watchdog");
}

/** Resolves once `url`'s health answers 200 (or throws past the deadline). */
async function healthy(url: string, proc: () => boolean): Promise<void> {
  await poll(`${url} to answer health`, async () => {
    if (!proc()) throw new Error(`the instance at ${url} exited`);
    try {
      const r = await fetch(`${url}/api/v1/health`);
      await r.body?.cancel();
      return r.status === 200;
    } catch {
      return false; // not listening yet
    }
  }, { deadline: 180_000, every: 100 });
}

function instance(
  dir: string,
  index: number,
  args: string[],
  env: Record<string, string>,
): Instance {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = `${dir}/moonbase-${index}.log`;
  const pidFile = `${dir}/run/moonbase-${index}.pid`;
  let child: Deno.ChildProcess | undefined;
  let status: Promise<Deno.CommandStatus> | undefined;
  let alive = false;
  const spawn = async () => {
    const argv = [
      Deno.execPath(),
      "run",
      "--unstable-net",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys",
      "main.ts",
      ...args,
      "--dataDir",
      `${dir}/data-${index}`,
      "serve",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
    ];
    // `exec`: the shell becomes Deno (one process, the pid killed), its
    // output appended to the instance's log.
    child = new Deno.Command("sh", {
      args: ["-c", `exec ${argv.map(q).join(" ")} >>${q(log)} 2>&1`],
      cwd: ROOT,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    alive = true;
    await Deno.writeTextFile(pidFile, String(child.pid));
    status = child.status.then((s) => {
      alive = false;
      return s;
    });
  };
  return {
    index,
    port,
    url,
    address: `127.0.0.1:${port}`,
    running: () => alive,
    async kill() {
      if (!child || !alive) return;
      child.kill("SIGKILL");
      await status;
      await Deno.remove(pidFile).catch(() => {});
    },
    async start() {
      if (alive) throw new Error(`instance ${index} runs already`);
      await spawn();
      await healthy(url, () => alive);
    },
    output: () => Deno.readTextFile(log).catch(() => ""),
  };
}

/** SIGTERM (a graceful stop), SIGKILL after `ms`. */
async function stopGently(pid: number, gone: () => boolean, ms: number) {
  try {
    Deno.kill(pid, "SIGTERM");
  } catch { /* gone */ }
  await poll("the process to stop", () => gone(), { deadline: ms, every: 50 })
    .catch(() => {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    });
}

/**
 * Starts PostgreSQL and the S3 gateway (the process's shared ones: a
 * database and a bucket of the cluster's own), `instances` Moonbase
 * processes on them, nginx in front, and the first admin.
 */
export async function startCluster(
  opts: ClusterOptions = {},
): Promise<Cluster> {
  const n = opts.instances ?? 3;
  const dir = await Deno.makeTempDir({ prefix: "mb_cluster_" });
  // nginx's workers run as nobody when the master runs as root.
  await Deno.chmod(dir, 0o755);
  for (const d of ["run", "nginx"]) {
    await Deno.mkdir(`${dir}/${d}`);
    await Deno.chmod(`${dir}/${d}`, 0o777);
  }
  await watchdog(dir);
  const [connection, s3] = await Promise.all([
    startPostgres().then((pg) => pg.createDatabase()),
    startS3(),
  ]);
  const bucket = await s3.createBucket();
  const files = s3.filesUrl(bucket, "app");
  const env = Deno.env.toObject();
  for (const k of Object.keys(env)) {
    if (k.startsWith("MB_") || k.startsWith("AWS_")) delete env[k];
  }
  Object.assign(env, {
    NO_COLOR: "1",
    MB_JWT_SECRET: CLUSTER_JWT_SECRET,
    MB_S3_ACCESS_KEY_ID: S3_KEY.accessKeyId,
    MB_S3_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey,
  });
  const args = [
    "--database",
    "PSQL",
    "--connection",
    connection,
    "--files",
    files,
    "--trustProxy",
    "--websocket",
    ...(opts.serveArgs ?? []),
  ];
  const instances = Array.from(
    { length: n },
    (_, i) => instance(dir, i, args, env),
  );
  let nginx: Deno.ChildProcess | undefined;
  let nginxAlive = false;
  const close = async () => {
    if (nginx && nginxAlive) {
      await stopGently(nginx.pid, () => !nginxAlive, 5_000);
      await nginx.status;
    }
    await Promise.all(instances.map((i) => i.kill()));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    // The first instance creates the system tables alone (the others
    // would wait on its locks anyway), then the rest start together.
    await instances[0].start();
    await Promise.all(instances.slice(1).map((i) => i.start()));
    const port = opts.port ?? freePort();
    // Also on IPv6 loopback where there is one: a second client address.
    const v6 = canListen("::1", port);
    const site = nginxSite(
      instances.map((i) => i.address),
      [`127.0.0.1:${port}`, ...(v6 ? [`[::1]:${port}`] : [])],
    );
    await Deno.writeTextFile(`${dir}/nginx.conf`, nginxConf(dir, site));
    nginx = new Deno.Command(NGINX, {
      args: ["-c", `${dir}/nginx.conf`, "-p", `${dir}/nginx`, "-e", "stderr"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    nginxAlive = true;
    let nginxErr = "";
    (async () => {
      for await (
        const s of nginx.stderr.pipeThrough(new TextDecoderStream())
      ) nginxErr += s;
    })().catch(() => {});
    nginx.status.then(() => nginxAlive = false);
    const url = `http://127.0.0.1:${port}`;
    await poll("nginx to answer", async () => {
      if (!nginxAlive) throw new Error(`nginx exited: ${nginxErr}`);
      try {
        const r = await fetch(`${url}/api/v1/health`);
        await r.body?.cancel();
        return r.status === 200;
      } catch {
        return false;
      }
    }, { deadline: 30_000, every: 50 });
    const adminToken = await firstAdmin(instances[0]);
    const byAddress = new Map(instances.map((i) => [i.address, i]));
    return {
      url,
      url6: v6 ? `http://[::1]:${port}` : undefined,
      instances,
      connection,
      s3,
      bucket,
      files,
      adminToken,
      dir,
      instanceOf(res) {
        // After a retry nginx lists every instance tried: the last answered.
        const tried = (res.headers.get("x-upstream") ?? "").split(/,\s*/);
        return byAddress.get(tried[tried.length - 1]);
      },
      close,
    };
  } catch (e) {
    const logs = await Promise.all(instances.map((i) => i.output()));
    await close();
    throw new Error(
      `${(e as Error).message}\n${
        logs.map((l, i) => `--- instance ${i}\n${l.slice(-3000)}`).join("\n")
      }`,
    );
  }
}

/** Creates the first admin with the setup token instance 0 printed. */
async function firstAdmin(first: Instance): Promise<string> {
  const token = await poll("the setup link", async () => {
    const m = /\/mb\/setup\?token=(\S+)/.exec(await first.output());
    return m?.[1];
  }, { deadline: 30_000, every: 100 });
  const r = await fetch(`${first.url}/api/v1/sys/admins/setup`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      // Not the address the tests' rate limits count.
      "x-forwarded-for": "192.0.2.1",
    },
    body: JSON.stringify(CLUSTER_ADMIN),
  });
  const body = await r.json();
  if (r.status !== 201) {
    throw new Error(
      `Cannot create the cluster's admin: ${JSON.stringify(body)}`,
    );
  }
  return body.data.token;
}
