/**
 * Serving stored files, attacked from the outside on both stores and both
 * databases: the one-GET download path (lib/files/serve.ts,
 * `FileBackend.open`) must answer every request exactly as the stat-then-read
 * path before it did. A table of Range / If-Range / If-None-Match headers
 * (multiple ranges, suffixes, reversed and huge numbers, whitespace, other
 * units, weak, stale and date validators) is sent for files of 0, 1 and 20
 * bytes, by GET and HEAD, and each answer (status, Content-Range,
 * Content-Length, ETag, the bytes) is held to an oracle written from the old
 * code. On S3 the gateway is real (tests/_s3.ts) behind a TCP proxy of this
 * test's own that can play a gateway which ignores Range, one that tells no
 * Content-Length (the body ends with the connection), and one whose body
 * stops mid-way (the download's stall deadline must still fire); the proxy
 * also counts the gateway connections still open, so an S3 answer left
 * unread (a 304, a 416, a HEAD, a client gone mid-download) shows.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  DATABASES,
  startServer,
  type TestServer,
} from "./_server.ts";
import { createEntities, createWith, getFile } from "./_files_fixtures.ts";
import { hasS3, S3_KEY, startS3 } from "./_s3.ts";
import { poll, within } from "./_wait.ts";

/** What the rewriting proxy does to each request and answer. */
interface ProxyPlay {
  /** Drop the request's Range header (a gateway that ignores Range). */
  dropRange?: boolean;
  /** Drop a GET answer's Content-Length (the body ends with the connection). */
  dropLength?: boolean;
  /** Forward this many bytes of a GET answer's body, then hold the rest. */
  stallAfter?: number;
}

interface RewritingProxy {
  endpoint: string;
  play: ProxyPlay;
  /** Connections to the gateway open now. */
  upstreamOpen(): number;
  /** Each request's head as it came from Moonbase (lines, lower-cased names kept as sent). */
  heads: string[][];
  close(): void;
}

const HEAD_END = new TextEncoder().encode("\r\n\r\n");

function indexOfHeadEnd(buf: Uint8Array): number {
  outer: for (let i = 0; i + HEAD_END.length <= buf.length; i++) {
    for (let j = 0; j < HEAD_END.length; j++) {
      if (buf[i + j] !== HEAD_END[j]) continue outer;
    }
    return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Reads until the end of a head; [head text, the bytes after it] or undefined on EOF. */
async function readHead(
  conn: Deno.Conn,
): Promise<[string, Uint8Array] | undefined> {
  let got: Uint8Array = new Uint8Array(0);
  const buf = new Uint8Array(64 * 1024);
  for (;;) {
    const at = indexOfHeadEnd(got);
    if (at >= 0) {
      return [
        new TextDecoder().decode(got.subarray(0, at)),
        got.slice(at + HEAD_END.length),
      ];
    }
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return undefined;
    got = concat(got, buf.subarray(0, n));
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<boolean> {
  let off = 0;
  while (off < bytes.length) {
    const w = await conn.write(bytes.subarray(off)).catch(() => -1);
    if (w < 0) return false;
    off += w;
  }
  return true;
}

/**
 * A TCP proxy in front of the gateway that rewrites heads only (the
 * signature stays valid: Host is the proxy's, and Range and Connection are
 * never signed). Each request goes on a connection of its own
 * (`Connection: close`), so every head is at the start of a stream.
 */
function rewritingProxy(upstream: string): RewritingProxy {
  const target = new URL(upstream);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const conns = new Set<Deno.Conn>();
  const ups = new Set<Deno.Conn>();
  const close = (c: Deno.Conn) => {
    conns.delete(c);
    ups.delete(c);
    try {
      c.close();
    } catch { /* closed */ }
  };
  const proxy: RewritingProxy = {
    endpoint: `http://127.0.0.1:${port}`,
    play: {},
    upstreamOpen: () => ups.size,
    heads: [],
    close() {
      try {
        listener.close();
      } catch { /* closed */ }
      for (const c of [...conns, ...ups]) close(c);
    },
  };
  const serve = async (conn: Deno.Conn) => {
    conns.add(conn);
    const play = { ...proxy.play };
    const req = await readHead(conn);
    if (!req) return close(conn);
    const lines = req[0].split("\r\n");
    proxy.heads.push(lines);
    const method = lines[0].split(" ")[0];
    const kept = lines.filter((l, i) =>
      i === 0 ||
      !(/^connection:/i.test(l) || (play.dropRange && /^range:/i.test(l)))
    );
    kept.push("connection: close");
    let up: Deno.Conn;
    try {
      up = await Deno.connect({
        hostname: target.hostname,
        port: Number(target.port),
      });
    } catch {
      return close(conn);
    }
    ups.add(up);
    const enc = new TextEncoder();
    if (!await writeAll(up, enc.encode(`${kept.join("\r\n")}\r\n\r\n`))) {
      close(up);
      return close(conn);
    }
    await writeAll(up, req[1]);
    const toUp = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) return;
        if (!await writeAll(up, buf.subarray(0, n))) return;
      }
    })();
    const toClient = (async () => {
      const res = await readHead(up);
      if (!res) return;
      const get = method === "GET";
      const rlines = res[0].split("\r\n").filter((l) =>
        !(get && play.dropLength && /^content-length:/i.test(l))
      );
      if (!await writeAll(conn, enc.encode(`${rlines.join("\r\n")}\r\n\r\n`))) {
        return;
      }
      let left = get && play.stallAfter !== undefined
        ? play.stallAfter
        : Infinity;
      let chunk = res[1];
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        if (chunk.length > left) chunk = chunk.subarray(0, left);
        left -= chunk.length;
        if (chunk.length && !await writeAll(conn, chunk)) return;
        if (left <= 0) {
          // Holds the rest: waits for the client to give up.
          await conn.read(new Uint8Array(1)).catch(() => null);
          return;
        }
        const n = await up.read(buf).catch(() => null);
        if (n === null) return;
        chunk = buf.subarray(0, n);
      }
    })();
    await Promise.race([toUp.then(() => toClient), toClient]);
    close(conn);
    close(up);
  };
  (async () => {
    for (;;) {
      let c: Deno.Conn;
      try {
        c = await listener.accept();
      } catch {
        return;
      }
      serve(c);
    }
  })();
  return proxy;
}

/** A request of the table. */
interface Ask {
  method: "GET" | "HEAD";
  range?: string;
  ifRange?: string;
  inm?: string;
}

/** What the stat-then-read serveFile before the one-GET path answered. */
interface Expected {
  status: number;
  contentRange: string | null;
  contentLength: string | null;
  body: string;
}

/** The old lib/files/serve.ts, as it decided status, ranges and bytes. */
function oracle(ask: Ask, data: string, etag: string): Expected {
  const size = data.length;
  const inm = ask.inm;
  if (
    inm &&
    inm.split(",").map((s) => s.trim().replace(/^W\//, "")).includes(etag)
  ) {
    return { status: 304, contentRange: null, contentLength: null, body: "" };
  }
  let start = 0, end = size - 1, status = 200;
  let contentRange: string | null = null;
  const range = ask.range?.trim();
  const ifRange = ask.ifRange?.trim();
  if (range && (!ifRange || ifRange === etag)) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    if (m && (m[1] !== "" || m[2] !== "")) {
      if (m[1] === "") {
        start = Math.max(0, size - Number(m[2]));
      } else {
        start = Number(m[1]);
        if (m[2] !== "") end = Math.min(end, Number(m[2]));
      }
      if (
        start > end || start >= size || (m[1] === "" && Number(m[2]) === 0)
      ) {
        return {
          status: 416,
          contentRange: `bytes */${size}`,
          contentLength: null,
          body: "",
        };
      }
      status = 206;
      contentRange = `bytes ${start}-${end}/${size}`;
    }
  }
  const length = size === 0 ? 0 : end - start + 1;
  return {
    status,
    contentRange,
    contentLength: String(length),
    body: ask.method === "HEAD" || size === 0 ? "" : data.slice(start, end + 1),
  };
}

const RANGES = [
  undefined,
  "bytes=0-0",
  "bytes=0-",
  "bytes=-0",
  "bytes=-1",
  "bytes=-5",
  "bytes=5-2",
  "bytes=1-0",
  "bytes=19-19",
  "bytes=19-",
  "bytes=20-",
  "bytes=0-1e+21",
  "bytes=0-99999999999999999999999",
  "bytes=99999999999999999999-",
  "bytes=-99999999999999999999",
  "bytes=9007199254740993-9007199254740999",
  "bytes=0-1,3-4",
  "items=0-1",
  "bytes = 0-1",
  "bytes=0-1 ",
  "  bytes=00003-00004",
  "BYTES=0-1",
  "bytes=-",
  "bytes=",
];

/** The validators If-Range is tried with (`etag` and `modified` of the file). */
function ifRanges(
  etag: string,
  modified: string,
  name: string,
): (string | undefined)[] {
  const random = /_([A-Za-z0-9]{10})/.exec(name)?.[1];
  return [
    undefined,
    etag,
    `W/${etag}`,
    // This file's ETag had it another size (a stale validator).
    `"zz-${random}"`,
    modified,
    '"other"',
  ];
}

async function check(
  s: TestServer,
  path: string,
  data: string,
  what: string,
): Promise<void> {
  const h = await getFile(s, path, { method: "HEAD" });
  const etag = h.headers.get("etag") ?? "";
  const modified = h.headers.get("last-modified") ?? "";
  const name = path.split("/").pop()!;
  const asks: Ask[] = [];
  for (const range of RANGES) {
    for (const ifRange of ifRanges(etag, modified, name)) {
      if (ifRange !== undefined && range === undefined) continue;
      for (const method of ["GET", "HEAD"] as const) {
        asks.push({ method, range, ifRange });
      }
    }
  }
  for (
    const inm of [etag, `W/${etag}`, "*", '"other", ' + etag, `"zz-x"`]
  ) {
    asks.push({ method: "GET", inm }, { method: "HEAD", inm });
    asks.push({ method: "GET", inm, range: "bytes=0-0" });
  }
  for (const ask of asks) {
    const headers: Record<string, string> = {};
    if (ask.range !== undefined) headers.range = ask.range;
    if (ask.ifRange !== undefined) headers["if-range"] = ask.ifRange;
    if (ask.inm !== undefined) headers["if-none-match"] = ask.inm;
    const r = await getFile(s, path, { method: ask.method, headers });
    const want = oracle(ask, data, etag);
    const label = `${what}: ${JSON.stringify(ask)}`;
    assertEquals({
      status: r.status,
      contentRange: r.headers.get("content-range"),
      contentLength: r.status === 304 ? null : r.headers.get("content-length"),
      body: r.text,
    }, {
      ...want,
      contentLength: want.status === 416
        ? r.headers.get("content-length")
        : want.contentLength,
    }, label);
    assertEquals(r.headers.get("etag"), etag, `${label}: ETag`);
    assertEquals(
      r.headers.get("last-modified"),
      modified,
      `${label}: Last-Modified`,
    );
  }
}

for (const db of DATABASES) {
  Deno.test({
    name: `files served on disk and from S3: exactly the old answers [${db}]`,
    ignore: !hasS3(),
    // The shared gateway's cluster outlives the test (tests/_s3.ts).
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      const s3 = await startS3();
      const bucket = await s3.createBucket();
      const proxy = rewritingProxy(s3.endpoint);
      const disk = await startServer(db);
      const remote = await startServer(db, {
        files:
          `s3://${bucket}/atk?endpoint=${proxy.endpoint}&region=us-east-1&path_style=true`,
        filesCredentials: S3_KEY,
        // The S3 deadline (and a body's longest pause).
        bodyTimeout: 2,
        maxUploadSize: 16 * 1024 * 1024,
      });
      try {
        const files: Record<string, string> = {
          empty: "",
          one: "x",
          twenty: "0123456789abcdefghij",
        };
        const paths = new Map<TestServer, Record<string, string>>();
        for (const s of [disk, remote]) {
          await createEntities(s, "pub");
          const p: Record<string, string> = {};
          for (const [k, data] of Object.entries(files)) {
            const rec = await createWith(s, "pub", [
              { name: "cover", filename: `${k}.txt`, data },
            ]);
            p[k] = `/api/files/pub/${rec.cover}`;
          }
          paths.set(s, p);
        }
        const plays: [string, ProxyPlay][] = [
          ["as it is", {}],
          ["a gateway ignoring Range", { dropRange: true }],
          ["a gateway telling no Content-Length", { dropLength: true }],
        ];
        // A file too large for the sockets' buffers: an S3 answer left
        // unread holds its gateway connection open.
        const big = new Uint8Array(6 * 1024 * 1024).map((_, i) => i % 251);
        const bigRec = await createWith(remote, "pub", [
          { name: "cover", filename: "big.bin", data: big },
        ]);
        const bigPath = `/api/files/pub/${bigRec.cover}`;
        const bigName = bigRec.cover as string;
        const bigEtag =
          (await getFile(remote, bigPath, { method: "HEAD" })).headers.get(
            "etag",
          ) ?? "";
        // A released connection closes within milliseconds; one left to the
        // garbage collector stays for ~10 s: the deadline tells them apart.
        const released = () =>
          poll(
            "every gateway connection released",
            () => proxy.upstreamOpen() === 0,
            { deadline: 4_000 },
          );

        await t.step(
          "the stored bytes are asked for as stored (no compressed answer)",
          async () => {
            // A compressing proxy or CDN in front of S3 would otherwise answer
            // a GET with gzip, whose Content-Length is not the file's size,
            // and fetch would hand over other bytes than those counted.
            proxy.heads.length = 0;
            for (const method of ["GET", "HEAD"]) {
              const r = await getFile(remote, paths.get(remote)!.twenty, {
                method,
              });
              assertEquals(r.status, 200);
            }
            const asked = proxy.heads.filter((h) => /^(GET|HEAD) /.test(h[0]));
            assert(asked.length > 0, "no request reached the gateway");
            for (const h of asked) {
              const enc = h.filter((l) => /^accept-encoding:/i.test(l));
              assertEquals(
                enc.map((l) => l.split(":")[1].trim().toLowerCase()),
                ["identity"],
                h[0],
              );
            }
          },
        );

        for (const [k, data] of Object.entries(files)) {
          await t.step(`disk: ${k} (${data.length} bytes)`, async () => {
            await check(disk, paths.get(disk)![k], data, `disk ${k}`);
          });
          for (const [play, how] of plays) {
            await t.step(`S3, ${play}: ${k}`, async () => {
              proxy.play = how;
              try {
                await check(
                  remote,
                  paths.get(remote)![k],
                  data,
                  `S3 ${play} ${k}`,
                );
              } finally {
                proxy.play = {};
              }
              await poll(
                "no gateway connection left open",
                () => proxy.upstreamOpen() === 0,
              );
            });
          }
        }

        await t.step(
          "S3 answers not sent on are released (304, 416, HEAD, If-Range, a client gone)",
          async () => {
            const stale = `"zz-${/_([A-Za-z0-9]{10})/.exec(bigName)![1]}"`;
            const cases: [
              string,
              ProxyPlay,
              Record<string, string>,
              string,
              number,
            ][] = [
              ["304", {}, { "if-none-match": bigEtag }, "GET", 304],
              [
                "304, stale tag named",
                {},
                { "if-none-match": `${stale}, ${bigEtag}` },
                "GET",
                304,
              ],
              ["HEAD", {}, {}, "HEAD", 200],
              ["416", {}, { range: `bytes=${big.length}-` }, "GET", 416],
              [
                "416, Range ignored",
                { dropRange: true },
                { range: `bytes=${big.length}-` },
                "GET",
                416,
              ],
              [
                "416 reversed, Range ignored",
                { dropRange: true },
                { range: "bytes=9-2" },
                "GET",
                416,
              ],
              [
                "206, Range ignored",
                { dropRange: true },
                { range: "bytes=10-19" },
                "GET",
                206,
              ],
              [
                "If-Range stale: whole",
                {},
                { range: "bytes=10-19", "if-range": stale },
                "GET",
                200,
              ],
              [
                "no size told",
                { dropLength: true },
                { range: "bytes=10-19" },
                "GET",
                206,
              ],
            ];
            for (const [what, play, headers, method, status] of cases) {
              proxy.play = play;
              try {
                for (let i = 0; i < 3; i++) {
                  const r = await getFile(remote, bigPath, { method, headers });
                  assertEquals(r.status, status, what);
                  if (status === 206) {
                    assertEquals(r.text.length, 10, what);
                  }
                }
              } finally {
                proxy.play = {};
              }
              await released();
            }
            // A client that reads one chunk and goes.
            const res = await fetch(remote.url + bigPath);
            const reader = res.body!.getReader();
            await reader.read();
            await reader.cancel();
            await released();
          },
        );

        await t.step(
          "a gateway that stops mid-body: the download ends within the deadline, no hang",
          async () => {
            for (
              const [play, headers] of [
                [{ stallAfter: 64 * 1024 }, {}],
                [{ stallAfter: 64 * 1024 }, { range: "bytes=100-3000000" }],
                // The bytes skipped to reach a range stall.
                [{ stallAfter: 64 * 1024, dropRange: true }, {
                  range: "bytes=5000000-5000009",
                }],
              ] as [ProxyPlay, Record<string, string>][]
            ) {
              proxy.play = play;
              try {
                const outcome = await within(
                  `a stalled download ${JSON.stringify(headers)}`,
                  // The deadline is 2 s; without it something else cuts the
                  // connection only after ~30 s.
                  20_000,
                  (async () => {
                    const res = await fetch(remote.url + bigPath, { headers });
                    try {
                      const got = await res.arrayBuffer();
                      return `${res.status} ${got.byteLength} bytes`;
                    } catch {
                      return `${res.status} cut`;
                    }
                  })(),
                );
                assert(
                  /^(200|206) cut$|^503/.test(outcome),
                  `a stalled download: ${outcome}`,
                );
              } finally {
                proxy.play = {};
              }
              await released();
            }
            const r = await getFile(remote, bigPath);
            assertEquals([r.status, r.text.length], [200, big.length]);
          },
        );

        await t.step(
          "a file deleted during its download: its bytes or a cut, then 404",
          async () => {
            const rec = await createWith(remote, "pub", [
              { name: "cover", filename: "doomed.bin", data: big },
            ]);
            const path = `/api/files/pub/${rec.cover}`;
            const res = await fetch(remote.url + path);
            const reader = res.body!.getReader();
            let got = (await reader.read()).value?.length ?? 0;
            const del = await remote.request(
              "DELETE",
              `/api/v1/entities/pub/${rec.id}`,
              { token: await remote.adminToken() },
            );
            assertEquals(del.status, 204);
            const rest = await within(
              "the rest of the download",
              60_000,
              (async () => {
                try {
                  for (;;) {
                    const c = await reader.read();
                    if (c.done) return "done";
                    got += c.value.length;
                  }
                } catch {
                  return "cut";
                }
              })(),
            );
            assert(
              rest === "cut" || got === big.length,
              `${rest} after ${got} bytes`,
            );
            await poll(
              "the file gone",
              async () => (await getFile(remote, path)).status === 404,
            );
            await released();
          },
        );

        await t.step(
          "a private file refused: no S3 request for it at all",
          async () => {
            await createEntities(remote, "priv");
            const rec = await createWith(remote, "priv", [
              { name: "owner", value: "someone" },
              { name: "doc", filename: "secret.txt", data: "secret bytes" },
            ]);
            const name = rec.doc as string;
            const privId = remote.app.schemas.get("priv")!.id;
            const key = `atk/${privId}/${name}`;
            const before = (await s3.requests(bucket)).filter((q) =>
              q.key === key
            ).length;
            for (
              const [method, headers] of [
                ["GET", {}],
                ["HEAD", {}],
                ["GET", { range: "bytes=0-3" }],
                ["GET", { authorization: "Bearer not-a-token" }],
                ["GET", { "if-none-match": '"c-x"' }],
              ] as [string, Record<string, string>][]
            ) {
              const r = await getFile(remote, `/api/files/priv/${name}`, {
                method,
                headers,
              });
              assert(
                r.status === 404 || r.status === 401,
                `${method} ${JSON.stringify(headers)}: ${r.status}`,
              );
              assert(!r.text.includes("secret"), "no bytes");
            }
            const after = (await s3.requests(bucket)).filter((q) =>
              q.key === key
            ).length;
            assertEquals(after, before, "no request to S3 for a refused file");
          },
        );
      } finally {
        await disk.close();
        await remote.close();
        proxy.close();
      }
    },
  });
}
