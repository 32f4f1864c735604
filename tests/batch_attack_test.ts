/**
 * Attacks on batch and expand (issue 31): what two batches locking rows in
 * opposite order answer, a sign-up made by a record hook with `{ as }`,
 * hidden rows and fields through batch errors and expansions.
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
import { makeEntity, OPEN, withScripts } from "./_extend_fixtures.ts";

const HOOKS = `
export default (app) => {
  app.onRecord("beforeUpdate", "locks", async (e) => {
    if (e.record.title === "wait") await new Promise((r) => setTimeout(r, 300));
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
      // Each batch changes its first row, then waits in the hook of its
      // second while the other holds that row: on PostgreSQL a deadlock.
      const [x, y] = await Promise.all([
        batch(s, [
          {
            method: "PATCH",
            url: url("locks", a.data.id),
            body: { title: "x" },
          },
          {
            method: "PATCH",
            url: url("locks", b.data.id),
            body: { title: "wait" },
          },
        ]),
        batch(s, [
          {
            method: "PATCH",
            url: url("locks", b.data.id),
            body: { title: "y" },
          },
          {
            method: "PATCH",
            url: url("locks", a.data.id),
            body: { title: "wait" },
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
  }, { statementTimeout: 5 });
});
