/**
 * Three Moonbase processes on one PostgreSQL database and one S3 bucket
 * (Ceph's radosgw) behind nginx, round-robin (tests/_cluster.ts): files,
 * thumbnails and file tokens, logout, rule and schema changes, realtime and
 * login rate limits across instances, and a mixed load through nginx during
 * which one instance is killed with SIGKILL and started again.
 *
 * PostgreSQL only; skipped when PostgreSQL, nginx or Ceph's gateway is not
 * installed (or MB_TEST_DB=sqlite). The check that the docs' nginx block is
 * the harness's runs everywhere.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  type Call,
  DATABASES,
  type Reply,
  requestAt,
} from "./_server.ts";
import {
  type Cluster,
  hasCluster,
  type Instance,
  nginxSite,
  startCluster,
} from "./_cluster.ts";
import { openSse, openWs, type SseMessage } from "./_realtime_client.ts";
import { Images } from "./_images.ts";
import { pause, poll } from "./_wait.ts";

/** The status recorded for a file answer whose body the kill cut off. */
const CUT_MID_BODY = 599;

const USER = { email: "ada@example.com", password: "ada-password-1" };

Deno.test("cluster: the nginx block of deployment.md is the harness's", async () => {
  const doc = await Deno.readTextFile(
    new URL("../docs/operations/deployment.md", import.meta.url),
  );
  const m = /<!-- tested-nginx-config -->\s*```nginx\n([\s\S]*?)```/.exec(doc);
  assert(m, "deployment.md has a block marked <!-- tested-nginx-config -->");
  assertEquals(
    m[1],
    nginxSite(
      ["127.0.0.1:7071", "127.0.0.1:7072", "127.0.0.1:7073"],
      ["80"],
    ),
    "docs/operations/deployment.md's nginx block differs from tests/_cluster.ts nginxSite(): copy it over",
  );
});

/** Sequential distinct client addresses for direct calls (their own login counters). */
let nextAddress = 10;
function address(): string {
  return `198.51.100.${nextAddress++}`;
}

function direct(
  i: Instance,
  method: string,
  path: string,
  call: Call = {},
): Promise<Reply> {
  return requestAt(i.url, method, path, {
    ...call,
    headers: { "x-forwarded-for": address(), ...call.headers },
  });
}

async function login(i: Instance, password = USER.password): Promise<string> {
  const r = await direct(i, "POST", "/api/v1/auth/users/login", {
    body: { identity: USER.email, password },
  });
  assertStatus(r, 200, `login on instance ${i.index}`);
  return r.data.token;
}

/** Bytes of a file route, with the answer's status and headers. */
async function download(
  base: string,
  path: string,
  token?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
  const res = await fetch(base + path, {
    headers: token ? { ...headers, authorization: `Bearer ${token}` } : headers,
  });
  return {
    status: res.status,
    headers: res.headers,
    bytes: new Uint8Array(await res.arrayBuffer()),
  };
}

/** Every note id, read through nginx (pages of 500). */
async function allNotes(c: Cluster): Promise<Set<string>> {
  const ids = new Set<string>();
  let after = "";
  for (;;) {
    const r = await requestAt(
      c.url,
      "GET",
      `/api/v1/entities/notes?limit=500&fields=id${
        after ? `&after=${encodeURIComponent(after)}` : ""
      }`,
      { token: c.adminToken },
    );
    assertStatus(r, 200, "list notes");
    for (const x of r.data.items) ids.add(x.id);
    if (!r.data.has_more) return ids;
    after = r.data.cursor;
  }
}

/** What one request of the load got. */
interface Outcome {
  kind: string;
  status: number;
  /** nginx's X-Upstream: every instance it tried, in order. */
  upstream: string;
  /** Where the kill and restart were when it was sent. */
  phase: "before" | "down" | "back";
  /** Whether it ended after the kill began. */
  afterKill: boolean;
  id?: string;
}

Deno.test({
  name:
    "cluster: three instances behind nginx share files, tokens, schemas, realtime and limits, and survive a SIGKILL",
  ignore: !DATABASES.includes("postgres") || !hasCluster(),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const c = await startCluster();
    const images = new Images();
    const [a, b, d] = c.instances;
    const admin = c.adminToken;
    const proxy = (method: string, path: string, call: Call = {}) =>
      requestAt(c.url, method, path, call);
    try {
      let userId = "";
      let photo = "";

      await t.step(
        "schemas created through nginx reach every instance",
        async () => {
          const schemas = [
            {
              name: "users",
              type: "auth",
              fields: [{ name: "name", type: "string" }],
              rules: {
                add: { mode: "public", expr: "" },
                get: { mode: "auth", expr: "" },
                list: { mode: "auth", expr: "" },
              },
            },
            {
              name: "photos",
              type: "base",
              fields: [
                { name: "title", type: "string" },
                {
                  name: "image",
                  type: "file",
                  mime_types: ["image/*"],
                  thumbs: ["64x64"],
                },
              ],
              rules: {
                add: { mode: "auth", expr: "" },
                get: { mode: "auth", expr: "" },
                list: { mode: "auth", expr: "" },
              },
            },
            {
              name: "notes",
              type: "base",
              fields: [
                { name: "body", type: "string" },
                { name: "n", type: "int" },
              ],
            },
          ];
          for (const s of schemas) {
            assertStatus(
              await proxy("POST", "/api/v1/schemas", { token: admin, body: s }),
              201,
              `create ${s.name}`,
            );
          }
          for (const i of c.instances) {
            await poll(
              `instance ${i.index} to serve photos`,
              async () =>
                (await direct(i, "GET", "/api/v1/entities/photos", {
                  token: admin,
                })).status === 200,
            );
          }
          const r = await direct(b, "POST", "/api/v1/entities/users", {
            body: { ...USER, name: "Ada" },
          });
          assertStatus(r, 201, "signup on instance 1");
          userId = r.data.id;
        },
      );

      await t.step(
        "a file uploaded on one instance is read and thumbnailed on the others",
        async () => {
          const token = await login(a);
          const png = await images.make("png", 200, 100);
          const form = new FormData();
          form.append("title", "Red over blue");
          form.append(
            "image",
            new File([png as BlobPart], "photo.png", { type: "image/png" }),
          );
          const up = await direct(a, "POST", "/api/v1/entities/photos", {
            token,
            raw: form,
          });
          assertStatus(up, 201, "upload on instance 0");
          photo = up.data.image;
          const path = `/api/files/photos/${photo}`;
          const tags = new Set<string>();
          for (const i of [b, d]) {
            const got = await download(i.url, path, token);
            assertEquals(got.status, 200, `the file on instance ${i.index}`);
            assertEquals(got.bytes, png, `its bytes on instance ${i.index}`);
            assertEquals(got.headers.get("content-type"), "image/png");
            tags.add(got.headers.get("etag") ?? "");
            assertEquals(
              (await download(i.url, path)).status,
              404,
              `a guest on instance ${i.index}`,
            );
          }
          assertEquals(tags.size, 1, "one ETag everywhere");
          const part = await download(d.url, path, token, {
            range: "bytes=0-9",
          });
          assertEquals([part.status, part.bytes.length], [206, 10], "a range");

          const thumb = await download(b.url, `${path}?thumb=64x64`, token);
          assertEquals(thumb.status, 200, "the thumbnail made on instance 1");
          const info = await images.read(thumb.bytes);
          assertEquals([info.width, info.height], [64, 64]);
          const again = await download(d.url, `${path}?thumb=64x64`, token);
          assertEquals(again.status, 200, "the thumbnail on instance 2");
          assertEquals(again.bytes, thumb.bytes, "the same thumbnail");
          assertEquals(again.headers.get("etag"), thumb.headers.get("etag"));
          const keys = await c.s3.keys(c.bucket, "app/");
          assertEquals(
            keys.filter((k) => k.includes(photo)).length,
            2,
            `the original and one thumbnail in the bucket: ${keys.join(", ")}`,
          );
        },
      );

      await t.step(
        "a file token issued on one instance opens files on the others, and only files, until a password change",
        async () => {
          const session = await login(a);
          const ft = await direct(a, "POST", "/api/v1/files/token", {
            token: session,
          });
          assertStatus(ft, 200, "file token from instance 0");
          const fileToken: string = ft.data.token;
          const path = `/api/files/photos/${photo}`;
          for (const i of [b, d]) {
            assertEquals(
              (await download(i.url, `${path}?token=${fileToken}`)).status,
              200,
              `?token= on instance ${i.index}`,
            );
            assertEquals(
              (await download(i.url, `${path}?thumb=64x64&token=${fileToken}`))
                .status,
              200,
              `the thumbnail with ?token= on instance ${i.index}`,
            );
            // Replayed elsewhere, it is still a file token: no records, no stream.
            assertStatus(
              await direct(i, "GET", "/api/v1/entities/photos", {
                token: fileToken,
              }),
              401,
              `as a bearer for records on instance ${i.index}`,
            );
            const sse = await openSse(i, `topics=photos&token=${fileToken}`);
            sse.close();
            assertEquals(sse.status, 401, `realtime on instance ${i.index}`);
          }
          // A logout of the session that made it leaves it (documented) …
          assertStatus(
            await direct(b, "POST", "/api/v1/auth/users/logout", {
              token: session,
            }),
            200,
          );
          assertEquals(
            (await download(d.url, `${path}?token=${fileToken}`)).status,
            200,
            "after the logout",
          );
          // … a password change on one instance ends it on every instance.
          assertStatus(
            await direct(a, "PATCH", `/api/v1/entities/users/${userId}`, {
              token: admin,
              body: { password: "ada-password-2" },
            }),
            200,
            "password change on instance 0",
          );
          USER.password = "ada-password-2";
          for (const i of c.instances) {
            await poll(
              `instance ${i.index} to refuse the file token`,
              async () =>
                (await download(i.url, `${path}?token=${fileToken}`)).status ===
                  401,
            );
          }
        },
      );

      await t.step(
        "a logout through nginx ends the token and its streams on every instance",
        async () => {
          const token = await login(d);
          const stream = await openSse(c, `topics=photos&token=${token}`);
          assertEquals(stream.status, 200);
          assertEquals((await stream.next(10_000))?.event, "ready");
          for (const i of c.instances) {
            assertStatus(
              await direct(i, "GET", "/api/v1/entities/photos", { token }),
              200,
              `instance ${i.index} before`,
            );
          }
          assertStatus(
            await proxy("POST", "/api/v1/auth/users/logout", { token }),
            200,
            "logout through nginx",
          );
          for (const i of c.instances) {
            await poll(
              `instance ${i.index} to refuse the logged-out token`,
              async () =>
                (await direct(i, "GET", "/api/v1/entities/photos", { token }))
                  .status === 401,
            );
          }
          const last = await stream.next(10_000);
          assertEquals([last?.event, last?.data?.status], ["error", 401]);
          await stream.ended;
        },
      );

      await t.step(
        "a rule or schema change through nginx is in force on every instance at once",
        async () => {
          let r = await proxy("PATCH", "/api/v1/schemas/notes", {
            token: admin,
            body: { rules: { list: { mode: "public", expr: "" } } },
          });
          assertStatus(r, 200, "open notes' list");
          for (const i of c.instances) {
            assertStatus(
              await direct(i, "GET", "/api/v1/entities/notes"),
              200,
              `a guest lists on instance ${i.index}`,
            );
          }
          r = await proxy("PATCH", "/api/v1/schemas/notes", {
            token: admin,
            body: {
              rules: { list: { mode: "", expr: "" } },
              fields: [{ name: "tag", type: "string" }],
            },
          });
          assertStatus(r, 200, "close it again and add a field");
          for (const i of c.instances) {
            assertStatus(
              await direct(i, "GET", "/api/v1/entities/notes"),
              401,
              `a guest on instance ${i.index}`,
            );
            const made = await direct(i, "POST", "/api/v1/entities/notes", {
              token: admin,
              body: { body: "tagged", tag: `on ${i.index}` },
            });
            assertStatus(made, 201, `the new field on instance ${i.index}`);
            assertEquals(made.data.tag, `on ${i.index}`);
          }
        },
      );

      await t.step(
        "a subscriber through nginx gets the writes of every instance (SSE and WebSocket)",
        async () => {
          const sse = await openSse(c, "topics=notes", { token: admin });
          assertEquals(sse.status, 200);
          assertEquals((await sse.next(10_000))?.event, "ready");
          const ws = openWs(c, `token=${admin}`);
          assert(await ws.opened, "the WebSocket opens through nginx");
          ws.send({ type: "subscribe", topics: ["notes"] });
          assertEquals((await ws.nextOf("ready", 10_000))?.type, "ready");
          const made: string[] = [];
          for (const i of c.instances) {
            const r = await direct(i, "POST", "/api/v1/entities/notes", {
              token: admin,
              body: { body: `live from ${i.index}` },
            });
            assertStatus(r, 201);
            made.push(r.data.id);
          }
          const viaSse: string[] = [];
          const viaWs: string[] = [];
          while (viaSse.length < made.length) {
            const m = await sse.next(10_000);
            assert(m, `SSE got ${viaSse.length} of ${made.length} events`);
            if (m.event === "create") viaSse.push(m.data.id);
          }
          while (viaWs.length < made.length) {
            const m = await ws.nextOf("event", 10_000);
            assert(m, `the WebSocket got ${viaWs.length} of ${made.length}`);
            viaWs.push(m.id);
          }
          assertEquals(viaSse, made, "SSE: every instance's writes, in order");
          assertEquals(viaWs, made, "WebSocket: the same");
          sse.close();
          ws.close();
        },
      );

      await t.step(
        "the login rate limit counts across instances, by the address nginx saw",
        async () => {
          const seen = new Set<string>();
          const remaining: string[] = [];
          for (let k = 1; k <= 6; k++) {
            const r = await proxy("POST", "/api/v1/auth/users/login", {
              body: { identity: USER.email, password: "wrong-password" },
              // A forged hop: nginx appends the real client after it.
              headers: { "x-forwarded-for": `203.0.113.${k}` },
            });
            seen.add(c.instanceOf(r)?.address ?? "?");
            if (k < 6) {
              assertStatus(r, 401, `attempt ${k}`);
              remaining.push(r.headers.get("x-ratelimit-remaining") ?? "");
            } else {
              assertStatus(r, 429, "the sixth attempt");
              assert(r.headers.get("retry-after"), "429 carries Retry-After");
            }
          }
          assertEquals(remaining, ["4", "3", "2", "1", "0"]);
          if (c.url6) {
            // Another client (nginx on ::1 sees ::1): a limit of its own.
            const r = await requestAt(
              c.url6,
              "POST",
              "/api/v1/auth/users/login",
              {
                body: { identity: USER.email, password: "wrong-password" },
              },
            );
            assertStatus(r, 401, "a login from ::1 through nginx");
            assertEquals(r.headers.get("x-ratelimit-remaining"), "4");
          }
          assert(seen.size >= 2, `attempts reached ${[...seen].join(", ")}`);
        },
      );

      await t.step(
        "a mixed load through nginx loses no acknowledged write when an instance is killed (SIGKILL) and started again",
        async () => {
          const TOTAL = 300;
          const KILL_AT = 80;
          const START_AT = 160;
          const WORKERS = 6;
          // A subscriber through nginx; the instance it landed on is killed.
          const first = await openSse(c, "topics=notes", { token: admin });
          assertEquals(first.status, 200);
          assertEquals((await first.next(10_000))?.event, "ready");
          const victim = c.instanceOf(first);
          assert(
            victim,
            `the stream's instance: ${first.headers.get("x-upstream")}`,
          );
          const events: SseMessage[] = [];
          const collect = (async () => {
            for (;;) {
              const m = await first.next(60_000);
              if (!m) return;
              events.push(m);
            }
          })();

          const earlier = await allNotes(c);
          const outcomes: Outcome[] = [];
          const created: string[] = [];
          let sent = 0;
          let phase: Outcome["phase"] = "before";
          let restart: Promise<void> | undefined;
          let back = 0;
          const deadline = Date.now() + 240_000;
          const file = `/api/files/photos/${photo}`;
          const one = async (n: number): Promise<Outcome> => {
            const at = phase;
            const pick = n % 10;
            let r: Reply;
            let kind: string;
            if (pick < 5) {
              kind = "create";
              r = await proxy("POST", "/api/v1/entities/notes", {
                token: admin,
                body: { body: `load ${n}`, n },
              });
            } else if (pick < 7 && created.length > 0) {
              kind = "get";
              const id = created[(n * 7919) % created.length];
              r = await proxy("GET", `/api/v1/entities/notes/${id}`, {
                token: admin,
              });
            } else if (pick < 8) {
              kind = "list";
              r = await proxy("GET", "/api/v1/entities/notes?limit=5&sort=-n", {
                token: admin,
              });
            } else {
              kind = pick === 8 ? "file" : "thumb";
              const res = await fetch(
                c.url + file + (pick === 9 ? "?thumb=64x64" : ""),
                { headers: { authorization: `Bearer ${admin}` } },
              );
              let status = res.status;
              try {
                await res.arrayBuffer();
              } catch {
                // The instance died while its body streamed through nginx
                // (headers already sent): an in-flight request that failed.
                status = CUT_MID_BODY;
              }
              r = { status, headers: res.headers } as Reply;
            }
            const o: Outcome = {
              kind,
              status: r.status,
              upstream: r.headers.get("x-upstream") ?? "",
              phase: at,
              afterKill: phase !== "before",
            };
            if (kind === "create" && r.status === 201) {
              o.id = r.data.id;
              created.push(r.data.id);
            }
            return o;
          };
          const worker = async () => {
            for (;;) {
              const rejoined = phase === "back" && back >= 5;
              if (sent >= TOTAL && rejoined) return;
              if (Date.now() > deadline) {
                throw new Error(
                  `the load did not end: ${sent} sent, phase ${phase}, ${back} answered by the restarted instance`,
                );
              }
              // Past the planned load, only keep nginx busy until the
              // restarted instance answers again.
              if (sent >= TOTAL) await pause(100);
              const n = ++sent;
              if (n === KILL_AT) {
                phase = "down";
                await victim.kill();
              }
              if (n === START_AT) {
                restart = victim.start().then(() => {
                  phase = "back";
                });
              }
              const o = await one(n);
              outcomes.push(o);
              if (
                phase === "back" && o.phase === "back" &&
                o.upstream.endsWith(victim.address) && o.status < 300
              ) back++;
            }
          };
          await Promise.all(Array.from({ length: WORKERS }, worker));
          await restart;

          const failed = outcomes.filter((o) => o.status >= 300);
          const retried = outcomes.filter((o) => o.upstream.includes(","));
          const summary =
            `${outcomes.length} requests (${created.length} creates acknowledged), ${failed.length} failed ${
              JSON.stringify(failed.map((o) => [o.kind, o.status, o.upstream]))
            }, ${retried.length} retried by nginx on another instance`;
          console.log(`cluster load: ${summary}`);
          for (const o of failed) {
            assert(
              o.status === 502 || o.status === CUT_MID_BODY,
              `a failure is nginx's 502 or a body cut by the kill: ${summary}`,
            );
            assert(
              o.upstream.includes(victim.address) && o.afterKill,
              `only the killed instance's requests fail: ${summary}`,
            );
          }
          assert(
            failed.length <= WORKERS,
            `at most the requests in flight fail: ${summary}`,
          );
          assert(back >= 5, "the restarted instance serves again");

          // Every acknowledged create is stored, and readable on every instance.
          const stored = await allNotes(c);
          const lost = created.filter((id) => !stored.has(id));
          assertEquals(lost, [], "no acknowledged write lost");
          // A create that failed (its instance died) may have committed first.
          const extra = stored.size - earlier.size - created.length;
          console.log(
            `cluster load: ${extra} of the failed creates committed before their instance died`,
          );
          assert(extra >= 0 && extra <= failed.length, "no write from nowhere");
          for (const i of c.instances) {
            const id = created[created.length - 1 - i.index];
            assertStatus(
              await direct(i, "GET", `/api/v1/entities/notes/${id}`, {
                token: admin,
              }),
              200,
              `a note read on instance ${i.index}`,
            );
          }

          // The subscriber's stream ended with its instance; resumed through
          // nginx, it gets every acknowledged create, none twice.
          await first.ended;
          await collect;
          const lastId = events.at(-1)?.id;
          assert(lastId, "the first stream got events before the kill");
          const resumed = await openSse(c, "topics=notes", {
            token: admin,
            headers: { "last-event-id": lastId },
          });
          assertEquals(resumed.status, 200, "resume through nginx");
          const want = new Set(created);
          const got = new Map<string, number>();
          for (const m of events) {
            if (m.event === "create") {
              got.set(m.data.id, (got.get(m.data.id) ?? 0) + 1);
            }
          }
          const missing = () => [...want].filter((id) => !got.has(id));
          const end = Date.now() + 60_000;
          while (missing().length > 0 && Date.now() < end) {
            const m = await resumed.next(5_000);
            if (!m) continue;
            assert(m.event !== "reset", "the resume needs no reset");
            if (m.event === "create") {
              got.set(m.data.id, (got.get(m.data.id) ?? 0) + 1);
            }
          }
          resumed.close();
          assertEquals(
            missing(),
            [],
            "every acknowledged create reached the subscriber",
          );
          const twice = [...got].filter(([, k]) => k > 1).map(([id]) => id);
          assertEquals(twice, [], "no event twice");
        },
      );

      await t.step(
        "health through nginx while an instance is down",
        async () => {
          await d.kill();
          for (let k = 0; k < 6; k++) {
            const r = await proxy("GET", "/api/v1/health");
            assertStatus(r, 200, "nginx routes around the dead instance");
            assertEquals(r.data.files, "ok");
          }
        },
      );
    } finally {
      images.close();
      await c.close();
    }
  },
});
