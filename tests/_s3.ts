/**
 * A real S3 server for the tests: Ceph's RADOS Gateway (Debian's `radosgw`)
 * on a throwaway one-monitor, one-OSD Ceph cluster (the OSD keeps its
 * objects in memory), all on loopback. It checks SigV4 signatures, does
 * multipart uploads and ranges as S3 does (docs/internals/dependencies.md
 * says why this one).
 *
 * Like tests/_pg.ts: the first test file of the process that asks starts the
 * cluster and one shared gateway, the others find them through a directory
 * named after the process, and a watchdog outside the process stops every
 * daemon and removes the directory once the process is gone. Each test
 * takes buckets of its own (`createBucket`). A test that needs S3 to fail
 * (down, stalling, answering errors) puts a proxy of its own in front of the
 * shared gateway (`s3Proxy`): from Moonbase's side a proxy that refuses
 * connections is the S3 server being down, and nothing of it touches another
 * test; the S3 server behind it stays the real one.
 *
 * The cluster starts in a few seconds: its monitor proposes each change at
 * once (`paxos propose interval`; the default second per change made each
 * pool the gateway creates cost seconds), and each pool has one placement
 * group.
 *
 * @module
 */

import { AwsClient } from "aws4fetch";
import { pause, poll } from "./_wait.ts";

/** The key every gateway accepts. */
export const S3_KEY = {
  accessKeyId: "MBTESTACCESSKEY",
  secretAccessKey: "mb-test-secret-key-0123456789",
};

const REGION = "us-east-1";

/** A running gateway. */
export interface S3Peer {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** A client signing with `S3_KEY` (to look into buckets from a test). */
  readonly client: AwsClient;
  /** Creates a bucket of the caller's own; returns its name. */
  createBucket(): Promise<string>;
  /** The `--files` URL of a bucket (and prefix). */
  filesUrl(bucket: string, prefix?: string): string;
  /** Every key in a bucket (under `prefix`). */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  /** Puts an object as someone else would (not through Moonbase). */
  put(bucket: string, key: string, body: string | Uint8Array): Promise<void>;
  /** An object's bytes, or undefined. */
  get(bucket: string, key: string): Promise<Uint8Array | undefined>;
  /**
   * The requests the gateway answered for objects of `bucket` until now,
   * from its own access log (every request made before this call is in it:
   * a marker request is sent, and the log read until the marker is there).
   */
  requests(bucket: string): Promise<S3Request[]>;
}

/** A request as the gateway's access log tells it. */
export interface S3Request {
  method: string;
  /** The object's key (decoded), "" for the bucket itself. */
  key: string;
  status: number;
  /** Its Range header, or undefined. */
  range?: string;
}

/** True when Ceph's monitor, OSD and gateway are installed. */
export function hasS3(): boolean {
  for (const bin of ["radosgw", "ceph-mon", "ceph-osd", "monmaptool", "ceph"]) {
    try {
      Deno.statSync(`/usr/bin/${bin}`);
    } catch {
      return false;
    }
  }
  return true;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`Cannot run ${cmd}: ${text.trim()}`);
  return text;
}

function clientOf(): AwsClient {
  return new AwsClient({
    ...S3_KEY,
    service: "s3",
    region: REGION,
    retries: 0,
  });
}

/** The requests of `bucket` in a gateway's log (beast's access lines). */
function requestsIn(log: string, bucket: string): S3Request[] {
  const out: S3Request[] = [];
  const line =
    /"([A-Z]+) \/([^/ ?]+)\/?([^ ?]*)(?:\?\S*)? HTTP\/1\.1" (\d{3}) \S+ \S+ "[^"]*" (\S+) latency=/g;
  for (const m of log.matchAll(line)) {
    if (m[2] !== bucket) continue;
    out.push({
      method: m[1],
      key: decodeURIComponent(m[3]),
      status: Number(m[4]),
      range: m[5] === "-" ? undefined : m[5],
    });
  }
  return out;
}

function peerAt(endpoint: string, logFile: string): S3Peer {
  const client = clientOf();
  const peer: S3Peer = {
    endpoint,
    client,
    async createBucket() {
      const name = `mb-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
      const r = await client.fetch(`${endpoint}/${name}`, { method: "PUT" });
      const text = await r.text();
      if (r.status !== 200) {
        throw new Error(`Cannot create bucket ${name}: ${r.status} ${text}`);
      }
      return name;
    },
    filesUrl(bucket, prefix) {
      return `s3://${bucket}${
        prefix ? `/${prefix}` : ""
      }?endpoint=${endpoint}&region=${REGION}&path_style=true`;
    },
    async keys(bucket, prefix = "") {
      const out: string[] = [];
      let token = "";
      for (;;) {
        const q = new URLSearchParams({ "list-type": "2", prefix });
        if (token) q.set("continuation-token", token);
        const r = await client.fetch(`${endpoint}/${bucket}?${q}`);
        const text = await r.text();
        if (r.status !== 200) {
          throw new Error(`Cannot list ${bucket}: ${r.status} ${text}`);
        }
        for (const m of text.matchAll(/<Key>([^<]*)<\/Key>/g)) {
          out.push(m[1].replaceAll("&amp;", "&"));
        }
        token = /<NextContinuationToken>([^<]*)</.exec(text)?.[1] ?? "";
        if (!token) return out.sort();
      }
    },
    async put(bucket, key, body) {
      const r = await client.fetch(`${endpoint}/${bucket}/${key}`, {
        method: "PUT",
        body: body as BodyInit,
      });
      const text = await r.text();
      if (r.status !== 200) {
        throw new Error(`Cannot put ${key}: ${r.status} ${text}`);
      }
    },
    async get(bucket, key) {
      const r = await client.fetch(`${endpoint}/${bucket}/${key}`);
      if (r.status === 404) {
        await r.body?.cancel();
        return undefined;
      }
      if (r.status !== 200) throw new Error(`Cannot get ${key}: ${r.status}`);
      return new Uint8Array(await r.arrayBuffer());
    },
    async requests(bucket) {
      const marker = `.mb-log-marker-${crypto.randomUUID()}`;
      const r = await client.fetch(`${endpoint}/${bucket}/${marker}`);
      await r.body?.cancel();
      let seen: S3Request[] = [];
      await poll("the marker in the S3 gateway's log", async () => {
        seen = requestsIn(await Deno.readTextFile(logFile), bucket);
        return seen.some((q) => q.key === marker);
      }, { deadline: 30_000, every: 100 });
      return seen.slice(0, seen.findIndex((q) => q.key === marker));
    },
  };
  return peer;
}

/** What the shared cluster's directory holds (`cluster.json`). */
interface ClusterInfo {
  dir: string;
  conf: string;
  endpoint: string;
}

/** Starts a gateway on the cluster; resolves once it answers. */
async function startGateway(
  info: { dir: string; conf: string },
  name: string,
  port: number,
): Promise<void> {
  await run("radosgw", [
    "-c",
    info.conf,
    "-n",
    `client.${name}`,
    "--rgw-frontends",
    `beast endpoint=127.0.0.1:${port}`,
    "--rgw-data",
    `${info.dir}/rgw-${name}`,
    "--pid-file",
    `${info.dir}/run/${name}.pid`,
    "--admin-socket",
    `${info.dir}/run/${name}.asok`,
    "--log-file",
    `${info.dir}/${name}.log`,
  ]);
  await poll(`the S3 gateway ${name} on port ${port}`, async () => {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`);
      await r.body?.cancel();
      return r.status === 200;
    } catch {
      return false;
    }
  }, { deadline: 120_000, every: 200 });
}

async function pidOf(dir: string, name: string): Promise<number | undefined> {
  try {
    const pid = Number(
      (await Deno.readTextFile(`${dir}/run/${name}.pid`)).trim(),
    );
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function twice(f: () => Promise<unknown>): Promise<void> {
  try {
    await f();
  } catch {
    await pause(1000);
    await f();
  }
}

/** `f` again each second until it succeeds, for at most a minute. */
async function retried(f: () => Promise<unknown>): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    try {
      await f();
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await pause(1000);
    }
  }
}

/** Starts the cluster (monitor, OSD, one gateway) in `dir`. */
async function startCluster(dir: string): Promise<ClusterInfo> {
  const fsid = crypto.randomUUID();
  const mon = freePort();
  const conf = `${dir}/ceph.conf`;
  for (const d of ["mon", "osd", "run"]) await Deno.mkdir(`${dir}/${d}`);
  await Deno.writeTextFile(
    conf,
    `[global]
fsid = ${fsid}
mon host = v1:127.0.0.1:${mon}
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0
run dir = ${dir}/run
log file = ${dir}/$name.log
admin socket = ${dir}/run/$name.asok
pid file = ${dir}/run/$name.pid
mon data = ${dir}/mon
osd data = ${dir}/osd
osd objectstore = memstore
memstore device bytes = 2147483648
rgw dns name = 127.0.0.1
paxos propose interval = 0.01
paxos min wait = 0.001
`,
  );
  await run("monmaptool", [
    "--create",
    "--add",
    "a",
    `v1:127.0.0.1:${mon}`,
    "--fsid",
    fsid,
    `${dir}/monmap`,
  ]);
  await run("ceph-mon", [
    "-c",
    conf,
    "--mkfs",
    "-i",
    "a",
    "--monmap",
    `${dir}/monmap`,
  ]);
  await run("ceph-mon", ["-c", conf, "-i", "a"]);
  // The OSD's store is made (it asks the monitor only for the cluster's
  // id) while the monitor adds the OSD to its map. The monitor may still be
  // forming its quorum (seen: EPERM at first).
  await Promise.all([
    retried(() =>
      run("ceph", ["-c", conf, "--connect-timeout", "30", "osd", "create"])
    ),
    twice(() => run("ceph-osd", ["-c", conf, "--mkfs", "-i", "0"])),
  ]);
  // Seen once on a busy machine: the OSD's first start failing; a second one works.
  await twice(() => run("ceph-osd", ["-c", conf, "-i", "0"]));
  const port = freePort();
  await startGateway({ dir, conf }, "rgw", port);
  await retried(() =>
    run("radosgw-admin", [
      "-c",
      conf,
      "user",
      "create",
      "--uid",
      "moonbase-tests",
      "--display-name",
      "Moonbase tests",
      "--access-key",
      S3_KEY.accessKeyId,
      "--secret",
      S3_KEY.secretAccessKey,
    ])
  );
  return { dir, conf, endpoint: `http://127.0.0.1:${port}` };
}

/**
 * Starts the cluster in a fresh subdirectory of `dir`, up to three times: on
 * a busy machine a start can fail midway (seen: the OSD told "wrong fsid" by
 * the monitor after a retried step); the daemons of a failed attempt are
 * killed before the next one (the watchdog removes every attempt's directory
 * later).
 */
async function startClusterRetried(dir: string): Promise<ClusterInfo> {
  await watchdog(dir);
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const sub = `${dir}/c${attempt}`;
    await Deno.mkdir(sub);
    try {
      return await startCluster(sub);
    } catch (err) {
      last = err;
      let names: string[] = [];
      try {
        for await (const e of Deno.readDir(`${sub}/run`)) names.push(e.name);
      } catch {
        names = []; // no daemon got as far as a pid file
      }
      for (const name of names.filter((n) => n.endsWith(".pid"))) {
        const pid = await pidOf(sub, name.slice(0, -4));
        try {
          if (pid) Deno.kill(pid, "SIGKILL");
        } catch {
          // Ignored: that daemon is gone already.
        }
      }
      await pause(1000);
    }
  }
  throw last;
}

/**
 * Kills every daemon whose pid file is in `dir/<attempt>/run` and removes
 * `dir` once this process is gone (a shell in a session of its own polls its
 * id).
 */
async function watchdog(dir: string): Promise<void> {
  const q = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`;
  const script = `while kill -0 ${Deno.pid} 2>/dev/null; do sleep 1; done; ` +
    `for f in ${
      q(dir)
    }/*/run/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; ` +
    `sleep 1; rm -rf ${q(dir)}`;
  const out = await new Deno.Command("setsid", {
    args: ["-f", "sh", "-c", script],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (!out.success) throw new Error("Cannot start the S3 cluster's watchdog");
}

function processKey(): string {
  try {
    const stat = Deno.readTextFileSync(`/proc/${Deno.pid}/stat`);
    const since = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return `${Deno.pid}_${since}`;
  } catch {
    return String(Deno.pid);
  }
}

let shared: Promise<ClusterInfo> | undefined;

/** The directory of the process's cluster (its attempts are under it). */
function sharedDir(): string {
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  return `${tmp}/mb_s3_shared_${processKey()}`;
}

/** The process's cluster: started by the first worker that asks. */
function cluster(): Promise<ClusterInfo> {
  shared ??= (async () => {
    const dir = sharedDir();
    let owner = true;
    try {
      await Deno.mkdir(dir);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      owner = false;
    }
    if (owner) {
      try {
        const info = await startClusterRetried(dir);
        await Deno.writeTextFile(`${dir}/cluster.tmp`, JSON.stringify(info));
        await Deno.rename(`${dir}/cluster.tmp`, `${dir}/cluster.json`);
        return info;
      } catch (e) {
        await Deno.writeTextFile(`${dir}/error`, String(e)).catch(() => {});
        throw e;
      }
    }
    const read = (name: string) =>
      Deno.readTextFile(`${dir}/${name}`).catch(() => undefined);
    const deadline = Date.now() + 240_000;
    for (;;) {
      const text = await read("cluster.json");
      if (text) return JSON.parse(text) as ClusterInfo;
      const error = await read("error");
      if (error) throw new Error(`The S3 cluster did not start: ${error}`);
      if (Date.now() > deadline) {
        throw new Error(`The S3 cluster did not start in ${dir}`);
      }
      await pause(100);
    }
  })();
  return shared;
}

/** The process's shared gateway (started with the cluster, once). */
export async function startS3(): Promise<S3Peer> {
  const info = await cluster();
  return peerAt(info.endpoint, `${info.dir}/rgw.log`);
}

/**
 * Stops the process's cluster now (its daemons, then its directory) rather
 * than when the process ends; a later `startS3` starts a new one. Only for
 * a process that alone uses the cluster (`deno task bench`, which must not
 * leave Ceph running beside the scenarios that do not need it), never for
 * tests, whose files share it.
 */
export async function stopS3(): Promise<void> {
  const started = shared;
  if (!started) return;
  shared = undefined;
  const info = await started.catch(() => undefined);
  if (info) {
    const pids: number[] = [];
    for await (const e of Deno.readDir(`${info.dir}/run`)) {
      if (!e.name.endsWith(".pid")) continue;
      const pid = await pidOf(info.dir, e.name.slice(0, -4));
      if (pid) pids.push(pid);
    }
    const alive = (pid: number) => {
      try {
        return Deno.statSync(`/proc/${pid}`).isDirectory;
      } catch {
        return false;
      }
    };
    // Killed, as the watchdog does: the cluster's objects are throwaway.
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Ignored: that daemon is gone already.
      }
    }
    await poll("the S3 cluster's daemons to stop", () => !pids.some(alive), {
      deadline: 20_000,
      every: 50,
    });
  }
  // The watchdog removes it too once the process ends; gone already is fine.
  await Deno.remove(sharedDir(), { recursive: true }).catch(() => {});
}

/**
 * What `S3Proxy` does with requests: pass them on, refuse every connection
 * (`down`: nothing listens on its port, as when the S3 server is stopped),
 * stall (accept, never answer), or answer an S3 error itself.
 */
export type ProxyMode = "pass" | "down" | "stall" | "error403" | "error500";

/**
 * A TCP proxy in front of a gateway that can be down, stall or answer errors
 * itself.
 */
export interface S3Proxy {
  /** `http://127.0.0.1:<port>` of the proxy (the same port in every mode). */
  readonly endpoint: string;
  /** Switches mode; connections open now are closed (a client reconnects). */
  set(mode: ProxyMode): void;
  close(): void;
}

/**
 * An error as S3 sends it, with the parts a client must never be shown
 * (what the server signed, its request id).
 */
export const S3_ERROR_BODY =
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message><StringToSign>AWS4-HMAC-SHA256 LEAKED-STRING-TO-SIGN</StringToSign><RequestId>LEAKED-REQUEST-ID</RequestId></Error>`;

/** Starts a proxy to `upstream` (an endpoint URL) in mode `pass`. */
export function s3Proxy(upstream: string): S3Proxy {
  const target = new URL(upstream);
  let listener: Deno.Listener | undefined = Deno.listen({
    hostname: "127.0.0.1",
    port: 0,
  });
  const port = (listener.addr as Deno.NetAddr).port;
  let mode: ProxyMode = "pass";
  let closed = false;
  const open = new Set<Deno.Conn>();
  const closeConn = (c: Deno.Conn) => {
    open.delete(c);
    try {
      c.close();
    } catch { /* closed */ }
  };
  const enc = new TextEncoder();
  const serve = async (conn: Deno.Conn) => {
    open.add(conn);
    const now = mode;
    // Accepted as the proxy went down: refused as the rest.
    if (now === "down") return closeConn(conn);
    if (now === "stall") {
      // Read and drop; never answer.
      const buf = new Uint8Array(64 * 1024);
      while (await conn.read(buf).catch(() => null) !== null) { /* dropped */ }
      closeConn(conn);
      return;
    }
    if (now === "error403" || now === "error500") {
      const buf = new Uint8Array(64 * 1024);
      let head = "";
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) return closeConn(conn);
        head += new TextDecoder().decode(buf.subarray(0, n));
      }
      const status = now === "error403"
        ? "403 Forbidden"
        : "500 Internal Server Error";
      const body = enc.encode(S3_ERROR_BODY);
      await conn.write(enc.encode(
        `HTTP/1.1 ${status}\r\ncontent-type: application/xml\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
      )).catch(() => 0);
      await conn.write(body).catch(() => 0);
      return closeConn(conn);
    }
    let up: Deno.Conn;
    try {
      up = await Deno.connect({
        hostname: target.hostname,
        port: Number(target.port),
      });
    } catch {
      return closeConn(conn);
    }
    open.add(up);
    const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await from.read(buf).catch(() => null);
        if (n === null) break;
        let off = 0;
        while (off < n) {
          const w = await to.write(buf.subarray(off, n)).catch(() => -1);
          if (w < 0) return;
          off += w;
        }
      }
    };
    await Promise.race([pipe(conn, up), pipe(up, conn)]);
    closeConn(conn);
    closeConn(up);
  };
  const accept = async (l: Deno.Listener) => {
    for (;;) {
      let c: Deno.Conn;
      try {
        c = await l.accept();
      } catch {
        return; // closed: down, or the proxy closed
      }
      serve(c);
    }
  };
  const unlisten = () => {
    try {
      listener?.close();
    } catch { /* closed */ }
    listener = undefined;
  };
  accept(listener);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    set(m) {
      if (closed) throw new Error("Cannot switch the S3 proxy: it is closed");
      mode = m;
      for (const c of [...open]) closeConn(c);
      if (m === "down") unlisten();
      else if (!listener) {
        // Up again on the same port (the endpoint Moonbase was given).
        listener = Deno.listen({ hostname: "127.0.0.1", port });
        accept(listener);
      }
    },
    close() {
      closed = true;
      unlisten();
      for (const c of [...open]) closeConn(c);
    },
  };
}
