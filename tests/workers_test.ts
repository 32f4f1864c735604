/**
 * `moonbase serve --workers 2` (the real CLI, on SQLite and PostgreSQL):
 * both isolates answer; hundreds of concurrent creates and patches, each on
 * a connection of its own, land exactly once with no 5xx and no "locked";
 * a schema change (or deletion) through one isolate is in force on both at
 * once; a logged-out token, and the other sessions of a user whose password
 * changed, are refused by both at once; the login throttle holds at
 * its limit across isolates; a realtime subscriber gets the writes of both
 * isolates, in order; SIGTERM drains both and exits 0.
 *
 * @module
 */

import { assert, assertEquals, DATABASES } from "./_server.ts";
import {
  type Cluster,
  inLanes,
  OPEN_RULES,
  startCluster,
  type WorkerReply,
  workersOf,
} from "./_workers_fixtures.ts";
import { openSse, type SseClient } from "./_realtime_client.ts";
import { HOST } from "./_cli_fixtures.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function makeEntity(
  c: Cluster,
  schema: Record<string, unknown>,
): Promise<WorkerReply> {
  const r = await c.call("POST", "/api/v1/schemas", {
    token: c.admin,
    body: { type: "base", fields: [], rules: OPEN_RULES, ...schema },
  });
  assert(r.status === 201, `create entity: ${r.status} ${r.text}`);
  return r;
}

function noFailure(replies: readonly WorkerReply[], ok: number, what: string) {
  const bad = replies.filter((r) => r.status !== ok);
  assert(
    bad.length === 0,
    `${what}: ${bad.length} not ${ok}: ${
      bad.slice(0, 3).map((r) => `${r.status} ${r.text}`).join(" | ")
    }`,
  );
  assert(!replies.some((r) => /locked/i.test(r.text)), `${what}: "locked"`);
}

for (const db of DATABASES) {
  Deno.test({
    ...opts,
    name: `workers (${db}): two isolates serve one Moonbase`,
    async fn(t) {
      const c = await startCluster(db, { args: ["--trustProxy"] });
      try {
        await t.step("both isolates answer", async () => {
          const replies = await inLanes(
            Array.from({ length: 40 }),
            4,
            () => c.call("GET", "/api/v1/health"),
          );
          noFailure(replies, 200, "health");
          assertEquals(workersOf(replies), ["0", "1"]);
        });

        await t.step("concurrent creates and patches land once", async () => {
          await makeEntity(c, {
            name: "notes",
            fields: [
              { name: "title", type: "string" },
              { name: "hits", type: "int" },
            ],
          });
          const titles = Array.from({ length: 300 }, (_, i) => `n${i}`);
          const created = await inLanes(
            titles,
            24,
            (title) =>
              c.call("POST", "/api/v1/entities/notes", {
                body: { title, hits: 0 },
              }),
          );
          noFailure(created, 201, "create");
          assertEquals(workersOf(created), ["0", "1"]);
          const patched = await inLanes(
            created,
            24,
            (r) =>
              c.call("PATCH", `/api/v1/entities/notes/${r.data.id}`, {
                body: { hits: 1 },
              }),
          );
          noFailure(patched, 200, "patch");
          assertEquals(workersOf(patched), ["0", "1"]);
          const list = await c.call(
            "GET",
            "/api/v1/entities/notes?limit=500",
          );
          assertEquals(list.status, 200);
          const items = list.data.items as { title: string; hits: number }[];
          assertEquals(items.length, 300);
          assertEquals(
            new Set(items.map((i) => i.title)).size,
            300,
            "every title once",
          );
          assert(items.every((i) => i.hits === 1), "every patch landed");
        });

        await t.step(
          "a schema change is in force on both at once",
          async () => {
            for (let round = 0; round < 4; round++) {
              const name = `fresh_${round}`;
              await makeEntity(c, {
                name,
                fields: [{ name: "a", type: "string" }],
              });
              const writes = await inLanes(
                Array.from({ length: 8 }),
                8,
                () =>
                  c.call("POST", `/api/v1/entities/${name}`, {
                    body: { a: "x" },
                  }),
              );
              noFailure(writes, 201, `writes to the new ${name}`);
              const schema = await c.call("GET", `/api/v1/schemas/${name}`, {
                token: c.admin,
              });
              const patch = await c.call("PATCH", `/api/v1/schemas/${name}`, {
                token: c.admin,
                body: {
                  fields: [...schema.data.fields, {
                    name: "b",
                    type: "string",
                  }],
                },
              });
              assert(
                patch.status === 200,
                `add field: ${patch.status} ${patch.text}`,
              );
              const more = await inLanes(
                Array.from({ length: 8 }),
                8,
                () =>
                  c.call("POST", `/api/v1/entities/${name}`, {
                    body: { a: "y", b: "new" },
                  }),
              );
              noFailure(more, 201, `writes with the new field of ${name}`);
              assert(more.every((r) => r.data.b === "new"), "field b kept");
              if (round === 3) {
                assertEquals(workersOf([...writes, ...more]), ["0", "1"]);
              }
            }
            const gone = await c.call("DELETE", "/api/v1/schemas/fresh_0", {
              token: c.admin,
            });
            assertEquals(gone.status, 204, gone.text);
            const after = await inLanes(
              Array.from({ length: 8 }),
              8,
              () => c.call("GET", "/api/v1/entities/fresh_0"),
            );
            noFailure(after, 404, "the deleted entity");
          },
        );

        await t.step(
          "a logged-out token is refused by both at once",
          async () => {
            await makeEntity(c, {
              name: "members",
              type: "auth",
              rules: { ...OPEN_RULES, list: { mode: "auth", expr: "" } },
            });
            const r = await c.call("POST", "/api/v1/entities/members", {
              body: { email: "m@example.com", password: "member-password-1" },
              headers: { "x-forwarded-for": "10.9.0.1" },
            });
            assert(r.status === 201, `sign-up: ${r.status} ${r.text}`);
            const seen: WorkerReply[] = [];
            for (let round = 0; round < 4; round++) {
              const login = await c.call("POST", "/api/v1/auth/members/login", {
                body: {
                  identity: "m@example.com",
                  password: "member-password-1",
                },
                headers: { "x-forwarded-for": `10.9.1.${round}` },
              });
              assert(
                login.status === 200,
                `login: ${login.status} ${login.text}`,
              );
              const token = login.data.token as string;
              const before = await c.call("GET", "/api/v1/entities/members", {
                token,
              });
              assertEquals(before.status, 200, "the token works");
              const out = await c.call("POST", "/api/v1/auth/members/logout", {
                token,
              });
              assertEquals(out.status, 200, "logout");
              const after = await inLanes(
                Array.from({ length: 12 }),
                12,
                () => c.call("GET", "/api/v1/entities/members", { token }),
              );
              noFailure(after, 401, `round ${round}: the token after logout`);
              seen.push(...after);
            }
            assertEquals(workersOf(seen), ["0", "1"]);
          },
        );

        await t.step(
          "a new password ends the other sessions on both",
          async () => {
            const email = "pw@example.com", first = "first-password-1";
            const r = await c.call("POST", "/api/v1/entities/members", {
              body: { email, password: first },
              headers: { "x-forwarded-for": "10.9.3.1" },
            });
            assert(r.status === 201, `sign-up: ${r.status} ${r.text}`);
            const login = (ip: string) =>
              c.call("POST", "/api/v1/auth/members/login", {
                body: { identity: email, password: first },
                headers: { "x-forwarded-for": ip },
              });
            const [a, b] = [await login("10.9.3.2"), await login("10.9.3.3")];
            assert(a.status === 200 && b.status === 200, "logins");
            const change = await c.call(
              "PATCH",
              `/api/v1/entities/members/${r.data.id}`,
              {
                token: a.data.token,
                body: { password: "second-password-2", oldPassword: first },
              },
            );
            assertEquals(change.status, 200, change.text);
            const use = (token: string) =>
              inLanes(
                Array.from({ length: 12 }),
                12,
                () => c.call("GET", "/api/v1/entities/members", { token }),
              );
            const [kept, ended] = [
              await use(a.data.token),
              await use(b.data.token),
            ];
            noFailure(kept, 200, "the session that changed it");
            noFailure(ended, 401, "the other session");
            assertEquals(workersOf(ended), ["0", "1"]);
          },
        );

        await t.step("the login throttle holds at its limit", async () => {
          const tries = await inLanes(
            Array.from({ length: 14 }),
            7,
            () =>
              c.call("POST", "/api/v1/auth/members/login", {
                body: { identity: "m@example.com", password: "wrong-password" },
                headers: { "x-forwarded-for": "10.9.2.1" },
              }),
          );
          const limited = tries.filter((r) => r.status === 429).length;
          assertEquals(
            limited,
            14 - 5,
            "5 attempts a minute, whichever isolate",
          );
          assertEquals(workersOf(tries), ["0", "1"]);
        });

        await t.step(
          "realtime gets both isolates' writes in order",
          async () => {
            await makeEntity(c, {
              name: "feed",
              fields: [{ name: "n", type: "int" }],
            });
            const streams: SseClient[] = [];
            try {
              // Streams until both isolates hold one.
              const holders = new Set<string>();
              for (let i = 0; i < 20 && holders.size < 2; i++) {
                const s = await openSse({ url: c.url } as never, "topics=feed");
                assertEquals(s.status, 200);
                holders.add(String(s.headers.get("x-moonbase-worker")));
                streams.push(s);
                assertEquals((await s.next())?.event, "ready");
              }
              assertEquals([...holders].sort(), ["0", "1"]);
              // Sequential writes: their order is known.
              const writes: WorkerReply[] = [];
              for (let n = 0; n < 30; n++) {
                const r = await c.call("POST", "/api/v1/entities/feed", {
                  body: { n },
                });
                assertEquals(r.status, 201);
                writes.push(r);
              }
              assertEquals(workersOf(writes), ["0", "1"]);
              // And concurrent ones: in commit order, each once.
              const burst = await inLanes(
                Array.from({ length: 60 }, (_, i) => 100 + i),
                12,
                (n) => c.call("POST", "/api/v1/entities/feed", { body: { n } }),
              );
              noFailure(burst, 201, "burst");
              for (const s of streams) {
                const got: { id: string; n: number; event: string }[] = [];
                while (got.length < 90) {
                  const m = await s.next(5000);
                  if (!m) break;
                  got.push({
                    id: m.id!,
                    n: m.data?.record?.n ?? m.data?.n,
                    event: m.event,
                  });
                }
                assertEquals(got.length, 90, "every event");
                assertEquals(
                  got.slice(0, 30).map((g) => g.n),
                  Array.from({ length: 30 }, (_, i) => i),
                  "the sequential writes in order",
                );
                assertEquals(
                  new Set(got.slice(30).map((g) => g.n)).size,
                  60,
                  "each concurrent write once",
                );
              }
            } finally {
              for (const s of streams) s.close();
            }
          },
        );

        await t.step("SIGTERM drains both isolates and exits 0", async () => {
          const { code, timedOut } = await c.served.stop("SIGTERM", 20_000);
          assertEquals([code, timedOut], [0, false]);
          const refused = await Deno.connect({
            hostname: HOST,
            port: c.served.port,
          }).then((conn) => (conn.close(), false), () => true);
          assert(refused, "the port is closed");
          assert(!/error|panic/i.test(c.served.stderr()), c.served.stderr());
        });
      } finally {
        await c.kill();
      }
    },
  });
}
