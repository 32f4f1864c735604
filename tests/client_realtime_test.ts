/**
 * `@moonbase/client` realtime against a real server, on both databases:
 * one connection for every topic, events by entity and by record, expand,
 * unsubscribe, the stream reopened with the new token after a refresh, and
 * reconnect with backoff and resume by the last event id across a server
 * restart (on the same port and data, with writes made while it was down).
 *
 * @module
 */

import { createApp } from "../mod.ts";
import { type InternalApp, internalApp } from "../lib/internal_app.ts";
import type { MoonbaseError, RealtimeEvent } from "../client/mod.ts";
import { hasPostgres, startPostgres } from "./_pg.ts";
import {
  ADMIN_PASSWORD_HASH,
  assert,
  assertEquals,
  DATABASES,
  forEachDb,
  startServer,
  TEST_JWT_SECRET,
} from "./_server.ts";
import {
  adminClient,
  clientOf,
  exampleEntities,
  freshAddressFetch,
  rejection,
  untyped,
} from "./_client_fixtures.ts";
import { fastUser, issue } from "./_auth_fixtures.ts";
import { poll } from "./_wait.ts";
import type { PostsRecord } from "../examples/client_app/schema.ts";

const FAST = { realtime: { backoff: [50, 100, 200] } };

/** Collects the events a callback gets. */
function collector<R>() {
  const got: RealtimeEvent<R>[] = [];
  return {
    got,
    push: (e: RealtimeEvent<R>) => void got.push(e),
    /** Waits until `n` events came. */
    count: (n: number, what: string) =>
      poll(what, () => got.length >= n ? got : undefined),
  };
}

forEachDb("client realtime: topics, expand, refresh", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    await exampleEntities(s);
    const admin = await adminClient(s, FAST);
    const mb = clientOf(s, FAST);
    // The user is seeded with a precomputed hash and its session issued
    // directly: sign-up and login are the client auth suite's.
    const user = await fastUser(s, "users", {
      email: `rt-${db}@example.com`,
      name: "Rt",
    });
    mb.authStore.save(await issue(s, "users", user.id), user);

    await t.step(
      "one connection for every topic; by entity and by id",
      async () => {
        const posts = mb.entity("posts");
        const all = collector<PostsRecord>();
        const one = collector<PostsRecord>();
        const first = await posts.create({ title: "first" });
        const stopAll = await posts.subscribe("*", all.push, {
          expand: "author",
        });
        const stopOne = await posts.subscribe(first.id, one.push);
        await mb.entity("users").subscribe("*", () => {});
        assertEquals(s.app.realtime!.hub.subscribers.size, 1, "one stream");

        await posts.update(first.id, { title: "first!" });
        const second = await posts.create({ title: "second" });
        await all.count(2, "two events on the entity topic");
        await one.count(1, "one event on the record topic");
        assertEquals(all.got.map((e) => [e.action, e.record.title]), [
          ["update", "first!"],
          ["create", "second"],
        ]);
        assertEquals(all.got[1].record.expand?.author?.id, user.id, "expanded");
        assertEquals(one.got[0].id, first.id);

        stopOne();
        await posts.delete(second.id);
        await posts.update(first.id, { title: "first!!" });
        await all.count(4, "the delete and the update");
        assertEquals(all.got[2].action, "delete");
        assertEquals(one.got.length, 1, "no more events after unsubscribe");
        stopAll();
        assert(mb.realtime.lastEventId !== undefined, "an id to resume from");
      },
    );

    await t.step(
      "a refused topic rejects its subscribe; the others go on",
      async () => {
        await admin.schemas.create({
          name: "vault",
          type: "base",
          fields: [{ name: "v", type: "string" }],
        });
        const users: string[] = [];
        const stop = await mb.entity("users").subscribe("*", (e) => {
          users.push(e.record.email);
        });
        const err = await rejection(() =>
          untyped(mb).entity("vault").subscribe("*", () => {})
        );
        assertEquals(err.status, 403, "an admin-only rule");
        await clientOf(s).entity("users").create({
          email: `later-${db}@example.com`,
          password: "correct-horse-2",
        });
        await poll(
          "users still followed",
          () => users.length ? true : undefined,
        );
        assertEquals(users, [`later-${db}@example.com`]);
        stop();
      },
    );

    await t.step(
      "a refresh reopens the stream with the new token",
      async () => {
        await admin.schemas.create({
          name: "members_only",
          type: "base",
          fields: [{ name: "n", type: "int" }],
          rules: {
            list: { mode: "auth", expr: "" },
            add: { mode: "auth", expr: "" },
          },
        });
        const any = untyped(mb);
        const got: RealtimeEvent[] = [];
        const errors: Error[] = [];
        const stop = await any.entity("members_only").subscribe(
          "*",
          (e) => got.push(e),
          {
            onError: (e) => errors.push(e),
          },
        );
        const before = mb.authStore.token;
        await mb.auth("users").refresh();
        assert(mb.authStore.token !== before, "a new token");
        // The old token is revoked: only a stream reopened with the new one
        // still gets events.
        await poll("the stream reopened", () => {
          const subs = [...s.app.realtime!.hub.subscribers];
          return subs.length === 1 && subs[0].claims?.jti !== undefined &&
              subs.every((x) => x.auth.id === user.id)
            ? true
            : undefined;
        });
        await any.entity("members_only").create({ n: 1 });
        await poll(
          "the event after the refresh",
          () => got.length >= 1 ? true : undefined,
        );
        assertEquals(errors, [], "no error reached the subscriber");
        assertEquals(mb.authStore.isValid, true, "the new token kept");
        stop();
      },
    );

    await t.step(
      "a stream the server ends during this client's refresh reports no error",
      async () => {
        // The race made certain: the refresh's answer is held back until the
        // server has ended the stream of the token the refresh revoked.
        const held: { until?: Promise<unknown> } = {};
        const slow = clientOf(s, {
          ...FAST,
          fetch: async (input, init) => {
            const res = await freshAddressFetch(input, init);
            if (String(input).endsWith("/refresh")) await held.until;
            return res;
          },
        });
        const session = await issue(s, "users", user.id);
        slow.authStore.save(session, user);
        const errors: MoonbaseError[] = [];
        const stop = await untyped(slow).entity("members_only").subscribe(
          "*",
          () => {},
          { onError: (e) => errors.push(e) },
        );
        const streams = () =>
          [...s.app.realtime!.hub.subscribers].filter((x) =>
            x.auth.id === user.id
          ).length;
        const before = streams();
        held.until = poll(
          "the server ended the revoked token's stream",
          () => streams() < before ? true : undefined,
        );
        await slow.auth("users").refresh();
        await poll(
          "the stream reopened",
          () => streams() === before ? true : undefined,
        );
        assertEquals(errors, [], "no error reached the subscriber");
        assert(slow.authStore.token !== session, "the new token kept");
        stop();
        slow.close();
      },
    );

    await t.step(
      "a stream refused with 401 waits for a new token before dropping the old",
      async () => {
        // Another tab's refresh revokes the token this client streams with;
        // the new token reaches this client only after the server ended the
        // stream. It must not log the user out meanwhile.
        const any = untyped(mb);
        const errors: MoonbaseError[] = [];
        const statuses: string[] = [];
        const stop = await any.entity("members_only").subscribe("*", () => {}, {
          onError: (e) => errors.push(e),
          onStatus: (st) => statuses.push(st),
        });
        assertEquals(statuses, ["live"]);
        const old = mb.authStore.token;
        const other = clientOf(s);
        other.authStore.save(old, mb.authStore.user);
        await other.auth("users").refresh();
        const fresh = other.authStore.token;
        other.close();
        await poll(
          "the stream refused",
          () => errors.length ? true : undefined,
        );
        assertEquals(errors[0].status, 401);
        assertEquals(mb.authStore.token, old, "kept for a grace");
        mb.authStore.save(fresh, mb.authStore.user);
        await poll(
          "live again with the new token",
          () => statuses.length === 2 ? true : undefined,
        );
        assertEquals(statuses, ["live", "live"]);
        assertEquals(mb.authStore.token, fresh);

        // No new token comes: the refused one is dropped after the grace.
        await mb.auth("users").logout().catch(() => {});
        mb.authStore.save(fresh, mb.authStore.user); // revoked, still held
        await poll(
          "the revoked token dropped",
          () => mb.authStore.token === "" ? true : undefined,
          { deadline: 10_000 },
        );
        stop();
      },
    );

    mb.close();
    admin.close();
  } finally {
    await s.close();
  }
});

/** A server on `port` (0: any) over `data`; returns it and its URL. */
async function serve(
  db: "sqlite" | "postgres",
  data: { dataDir: string; connection?: string },
  port: number,
): Promise<{ app: InternalApp; url: string; stop: () => Promise<void> }> {
  const app = internalApp(
    await createApp({
      quiet: true,
      jwtSecret: TEST_JWT_SECRET,
      trustProxy: true,
      dataDir: data.dataDir,
      ...(db === "postgres"
        ? { database: "PSQL", connection: data.connection }
        : {}),
    }),
  );
  const ac = new AbortController();
  const server = await app.serve({
    port,
    hostname: "127.0.0.1",
    signal: ac.signal,
  });
  return {
    app,
    url: `http://127.0.0.1:${server.addr.port}`,
    stop: async () => {
      ac.abort();
      await server.finished;
      await app.close();
    },
  };
}

for (const db of DATABASES) {
  Deno.test({
    name:
      `client realtime: reconnect and resume across a server restart [${db}]`,
    ignore: db === "postgres" && !hasPostgres(),
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const dataDir = await Deno.makeTempDir({ prefix: "mb_client_rt_" });
      const connection = db === "postgres"
        ? await (await startPostgres()).createDatabase()
        : undefined;
      const first = await serve(db, { dataDir, connection }, 0);
      const port = Number(new URL(first.url).port);
      const mb = clientOf(first, FAST);
      try {
        const admin = await adminClientAt(first);
        await admin.schemas.create({
          name: "feed",
          type: "base",
          fields: [{ name: "n", type: "int" }],
          rules: {
            list: { mode: "public", expr: "" },
            add: { mode: "public", expr: "" },
          },
        });
        admin.close();
        const feed = untyped(mb).entity("feed");
        const got: number[] = [];
        const statuses: string[] = [];
        await feed.subscribe("*", (e) => got.push(Number(e.record.n)), {
          onStatus: (st) => statuses.push(st),
        });
        await feed.create({ n: 1 });
        await poll(
          "the first event",
          () => got.length === 1 ? true : undefined,
        );

        await first.stop();
        // Written while no server listens: the client keeps retrying.
        const second = await serve(db, { dataDir, connection }, 0);
        const entity = second.app.schemas.get("feed")!;
        await entity.create({ n: 2 });
        await entity.create({ n: 3 });
        await second.stop();
        assert(!got.includes(2), "no event while the server was down");

        const third = await serve(db, { dataDir, connection }, port);
        try {
          await poll(
            "the missed events",
            () => got.length >= 3 ? true : undefined,
          );
          await feed.create({ n: 4 });
          await poll("a live event", () => got.length >= 4 ? true : undefined);
          assertEquals(got, [1, 2, 3, 4], "nothing lost, nothing repeated");
          assertEquals(
            statuses.filter((st, i) => st !== statuses[i - 1]),
            ["live", "reconnecting", "live"],
            "live, reconnecting while the server was away, live again",
          );
        } finally {
          mb.close();
          await third.stop();
        }
      } finally {
        mb.close();
        await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      }
    },
  });
}

/** A client of an admin, whose row has a precomputed hash (no scrypt). */
async function adminClientAt(server: { app: InternalApp; url: string }) {
  const admins = server.app.schemas.get("mb_admins")!;
  const now = new Date().toISOString();
  const id = crypto.randomUUID();
  await server.app.storage.run(
    `INSERT INTO "mb_admins" ("id", "created", "updated", "email", "password", "verified") VALUES (?, ?, ?, ?, ?, ?)`,
    [
      id,
      now,
      now,
      "rt-admin@example.com",
      ADMIN_PASSWORD_HASH,
      server.app.storage.dialect.encode("bool", false),
    ],
  );
  const user = await admins.read(id);
  assert(user, "the admin row");
  const { token } = await server.app.sessions.issue(admins, user);
  const mb = clientOf(server);
  mb.authStore.save(token, { id: String(user.id) });
  return mb;
}
