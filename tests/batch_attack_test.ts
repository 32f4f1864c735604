/**
 * Attacks on batch and expand (issue 31), one server per database:
 *
 * - two batches locking rows in opposite order: on PostgreSQL a deadlock,
 *   answered 409 "retry" (never a 500);
 * - a before-hook creating an auth record with `{ as }` inside a request
 *   (the sign-up throttle counts through the open write: no hang on
 *   SQLite);
 * - expand never shows a password or a user the caller may not see;
 * - multipart part names that name no request or field;
 * - a hidden record: batch PATCH, DELETE and upserts answer as alone.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type TestServer,
} from "./_server.ts";
import { makeEntity, OPEN, userOf, withScripts } from "./_extend_fixtures.ts";
import { sendForm } from "./_files_fixtures.ts";

// "wait": the two batches meet in this hook (each holding its first row)
// before either goes on, however the machine schedules them; on SQLite,
// where one batch writes at a time, the first goes on after 3 s alone.
const HOOKS = `
let arrived = 0;
export default (app) => {
  app.onRecord("beforeUpdate", "locks", async (e) => {
    if (e.record.title !== "wait") return;
    arrived++;
    const until = Date.now() + 3000;
    while (arrived < 2 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 10));
    }
  });
  app.onRecord("beforeCreate", "invites", async (e) => {
    const members = app.entities.get("members");
    await members.create(
      { email: e.record.address, password: "password-123" },
      { as: e.auth },
    );
  });
};
`;

const text = (name: string) => ({ name, type: "string" });

/** A batch request. */
type Req = { method: string; url: string; body?: Record<string, unknown> };

function batch(s: TestServer, requests: Req[], token?: string) {
  return s.request("POST", "/api/v1/batch", { token, body: { requests } });
}

const url = (entity: string, id?: string) =>
  `/api/v1/entities/${entity}${id ? `/${id}` : ""}`;

async function setup(s: TestServer): Promise<void> {
  await makeEntity(s, { name: "locks", fields: [text("title")] });
  await makeEntity(s, { name: "invites", fields: [text("address")] });
  await makeEntity(s, { name: "members", type: "auth", rules: OPEN });
}

async function cases(
  t: Deno.TestContext,
  s: TestServer,
  db: "sqlite" | "postgres",
): Promise<void> {
  await setup(s);

  await t.step(
    "two batches locking rows in opposite order: a 409 to retry, never a 500",
    async () => {
      const a = await s.request("POST", url("locks"), { body: { title: "a" } });
      const b = await s.request("POST", url("locks"), { body: { title: "b" } });
      // Each batch holds its first row (read for update before the hook
      // runs) and waits in that row's hook until the other holds its own;
      // then each wants the other's: on PostgreSQL a deadlock.
      const [x, y] = await Promise.all([
        batch(s, [
          {
            method: "PATCH",
            url: url("locks", a.data.id),
            body: { title: "wait" },
          },
          {
            method: "PATCH",
            url: url("locks", b.data.id),
            body: { title: "x" },
          },
        ]),
        batch(s, [
          {
            method: "PATCH",
            url: url("locks", b.data.id),
            body: { title: "wait" },
          },
          {
            method: "PATCH",
            url: url("locks", a.data.id),
            body: { title: "y" },
          },
        ]),
      ]);
      const statuses = [x.status, y.status].sort();
      if (db === "postgres") {
        assertEquals(statuses, [200, 409], `${x.text} ${y.text}`);
        const lost = x.status === 409 ? x : y;
        assert(lost.error.includes("retry"), lost.error);
        assert(!lost.error.includes("deadlock detected"), lost.error);
      } else {
        assertEquals(statuses, [200, 200], `${x.text} ${y.text}`);
      }
    },
  );

  await t.step(
    "a before-hook creating an auth record with { as } inside a request",
    async () => {
      const r = await s.request("POST", url("invites"), {
        body: { address: "invited@example.com" },
      });
      assertStatus(r, 201, "invite");
      const m = await s.app.storage.query(
        `SELECT COUNT(*) AS n FROM "members" WHERE "email" = ?`,
        ["invited@example.com"],
      );
      assertEquals(Number(m[0].n), 1);
      const b = await batch(s, [
        {
          method: "POST",
          url: url("invites"),
          body: { address: "in2@example.com" },
        },
      ]);
      assertStatus(b, 200, "invite in a batch");
    },
  );
}

forEachDb("batch attacks", async (t, db) => {
  await withScripts(db, { "hooks.js": HOOKS }, async (s) => {
    await cases(t, s, db);
    await probes(t, s);
  }, { statementTimeout: 5 });
});

async function probes(t: Deno.TestContext, s: TestServer): Promise<void> {
  const own = { mode: "custom", expr: "record.owner == auth.id" };
  const self = { mode: "custom", expr: "record.id == auth.id" };
  await makeEntity(s, {
    name: "people",
    type: "auth",
    rules: {
      ...OPEN,
      list: self,
      get: self,
      update: self,
      delete: self,
    },
  });
  await makeEntity(s, {
    name: "notes",
    fields: [text("owner"), text("body"), {
      name: "who",
      type: "relation",
      foreign_key: { entity: "people" },
    }, { name: "file", type: "file" }],
    rules: { ...OPEN, list: own, get: own, update: own, delete: own },
  });
  const ada = await userOf(s, "people", "ada@example.com");
  const bob = await userOf(s, "people", "bob@example.com");
  const note = await s.request("POST", url("notes"), {
    token: ada.token,
    body: { owner: ada.id, body: "ada's", who: ada.id },
  });
  assertStatus(note, 201, "note");
  await t.step(
    "expand never shows password or another's user",
    async () => {
      const mine = await s.request(
        "GET",
        `${url("notes", note.data.id)}?expand=who`,
        { token: ada.token },
      );
      assertStatus(mine, 200, "mine");
      assert(
        !("password" in mine.data.expand.who),
        JSON.stringify(mine.data),
      );
      const theirs = await s.request("POST", url("notes"), {
        token: bob.token,
        body: { owner: bob.id, body: "bob's", who: ada.id },
      });
      const r = await s.request(
        "GET",
        `${url("notes", theirs.data.id)}?expand=who`,
        { token: bob.token },
      );
      assertEquals(r.data.expand, {}, "ada hidden from bob");
    },
  );
  await t.step("multipart part names", async () => {
    const json = {
      requests: [{
        method: "POST",
        url: url("notes"),
        body: { owner: bob.id },
      }],
    };
    for (
      const name of [
        "requests.0.__proto__",
        "requests.0.constructor",
        "requests.999.file",
        "requests.-1.file",
        "requests.0.",
      ]
    ) {
      const r = await sendForm(s, "POST", "/api/v1/batch", [
        { name: "@json", value: JSON.stringify(json) },
        { name, filename: "a.txt", data: "x", type: "text/plain" },
      ], { token: bob.token });
      assert(r.status === 400, `${name}: ${r.status} ${r.text}`);
    }
  });
  await t.step("a hidden record: batch answers as alone", async () => {
    for (const method of ["PATCH", "DELETE"]) {
      const alone = await s.request(method, url("notes", note.data.id), {
        token: bob.token,
        body: method === "PATCH" ? { body: "x" } : undefined,
      });
      const missing = await s.request(
        method,
        url("notes", crypto.randomUUID()),
        {
          token: bob.token,
          body: method === "PATCH" ? { body: "x" } : undefined,
        },
      );
      assertEquals([alone.status, alone.error], [
        missing.status,
        missing.error,
      ]);
      const r = await batch(s, [{
        method,
        url: url("notes", note.data.id),
        body: method === "PATCH" ? { body: "x" } : undefined,
      }], bob.token);
      assertEquals(r.data?.response?.status, alone.status);
      assertEquals(r.data?.response?.error, alone.error);
    }
    const put = await batch(s, [{
      method: "PUT",
      url: url("notes"),
      body: { id: note.data.id, body: "x", owner: bob.id },
    }], bob.token);
    // As documented: the update branch's 404, exactly a PATCH's (an
    // upsert of a known id tells it exists; ids are random UUIDs).
    const patch = await s.request("PATCH", url("notes", note.data.id), {
      token: bob.token,
      body: { body: "x" },
    });
    assertEquals(put.data?.response, {
      status: 404,
      data: null,
      error: patch.error,
    });
    const putUser = await batch(s, [{
      method: "PUT",
      url: url("people"),
      body: {
        id: ada.id,
        email: "zzz@example.com",
        password: "password-999",
      },
    }], bob.token);
    assertEquals(putUser.status, 404, putUser.text);
    const still = await s.request("GET", url("people", ada.id), {
      token: ada.token,
    });
    assertEquals(still.data.email, "ada@example.com");
    const kept = await s.request("GET", url("notes", note.data.id), {
      token: ada.token,
    });
    assertEquals(kept.data.body, "ada's");
  });
}
