/**
 * `POST /api/v1/batch`: record writes in one transaction. One server per
 * database (with record hooks) for the behaviour steps, each on records of
 * its own; a second small server for the batch deadline.
 *
 * - a batch that succeeds answers each request as it would have alone;
 * - a failure at the last request leaves nothing: no row, no hook side
 *   effect, no file in the data directory, no realtime event;
 * - after-hooks run only once the batch committed;
 * - a rule-denied request fails the batch with exactly its own answer;
 * - upserts (both branches, and two racing for one id);
 * - batches beside concurrent single writes: no deadlock, no lost update;
 * - multipart batches with files (a replaced file removed after commit);
 * - limits: 101 requests, malformed requests, the sign-up throttle, the
 *   deadline.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  type TestServer,
} from "./_server.ts";
import { filesSnapshot, getFile, sendForm } from "./_files_fixtures.ts";
import {
  makeEntity,
  OPEN,
  rowCount,
  userOf,
  withScripts,
} from "./_extend_fixtures.ts";
import { setupMarks, subscribe, upToMark } from "./_realtime_cases.ts";

const HOOKS = `
export default (app) => {
  const audit = (note) => app.entities.get("audit").create({ note });
  app.onRecord("beforeCreate", "orders", async (e) => {
    await audit("before " + e.record.title);
    await e.db.run('UPDATE "counters" SET "n" = "n" + 1');
    if (e.record.title === "hook refuses") {
      throw app.error(409, "Cannot create order: the hook refuses");
    }
  });
  app.onRecord("afterCreate", "orders", async (e) => {
    const [row] = await app.db.query('SELECT COUNT(*) AS n FROM "orders"');
    await audit("after " + e.record.title + " saw " + Number(row.n));
  });
  // Counted outside any transaction: a hook that ran shows here even when
  // its batch rolled back.
  globalThis.__batchHookRuns = 0;
  app.route("GET", "/api/batch-hook-runs", () => ({
    runs: globalThis.__batchHookRuns,
  }));
  app.onRecord("beforeCreate", "tickets", () => {
    globalThis.__batchHookRuns++;
  });
  app.onRecord("beforeCreate", "slow", async () => {
    await new Promise((r) => setTimeout(r, 400));
  });
};
`;

const text = (name: string) => ({ name, type: "string" });
const own = { mode: "custom", expr: "record.owner == auth.id" };

/** A batch request. */
type Req = { method: string; url: string; body?: Record<string, unknown> };

function batch(s: TestServer, requests: Req[], token?: string) {
  return s.request("POST", "/api/v1/batch", { token, body: { requests } });
}

const url = (entity: string, id?: string) =>
  `/api/v1/entities/${entity}${id ? `/${id}` : ""}`;

async function notes(s: TestServer, prefix: string): Promise<string[]> {
  const rows = await s.app.storage.query(
    `SELECT "note" FROM "audit" WHERE "note" LIKE ? ORDER BY "note"`,
    [`${prefix}%`],
  );
  return rows.map((r) => String(r.note));
}

async function counter(s: TestServer): Promise<number> {
  const rows = await s.app.storage.query(`SELECT "n" FROM "counters"`);
  return Number(rows[0].n);
}

/** The envelope of a single request's answer. */
function envelope(r: Reply): { status: number; data: unknown; error: string } {
  return { status: r.status, data: r.data ?? null, error: r.error };
}

async function setup(s: TestServer): Promise<void> {
  await setupMarks(s);
  await makeEntity(s, { name: "audit", fields: [text("note")] });
  await makeEntity(s, {
    name: "counters",
    fields: [{ name: "n", type: "int" }],
  });
  await s.app.schemas.get("counters")!.create({ n: 0 });
  await makeEntity(s, {
    name: "orders",
    fields: [{ ...text("title"), required: true }, {
      name: "qty",
      type: "int",
    }],
  });
  await makeEntity(s, {
    name: "docs",
    fields: [text("title"), { name: "attachment", type: "file" }],
  });
  await makeEntity(s, {
    name: "secrets",
    fields: [text("owner"), text("text")],
    rules: { ...OPEN, list: own, get: own, update: own, delete: own },
  });
  await makeEntity(s, {
    name: "codes",
    fields: [{ ...text("code"), required: true, unique: true }],
  });
  await makeEntity(s, { name: "tickets", fields: [text("title")] });
  await makeEntity(s, {
    name: "members",
    type: "auth",
    rules: { ...OPEN, update: { mode: "auth", expr: "" } },
  });
}

async function cases(t: Deno.TestContext, s: TestServer): Promise<void> {
  await setup(s);
  const admin = await s.adminToken();

  await t.step("a batch answers each request as it would alone", async () => {
    const a = await s.request("POST", url("orders"), { body: { title: "a" } });
    const b = await s.request("POST", url("orders"), { body: { title: "b" } });
    const fresh = crypto.randomUUID();
    const r = await batch(s, [
      { method: "POST", url: url("orders"), body: { title: "c", qty: 3 } },
      { method: "PATCH", url: url("orders", a.data.id), body: { qty: 7 } },
      { method: "DELETE", url: url("orders", b.data.id) },
      { method: "PUT", url: url("orders"), body: { id: fresh, title: "u" } },
    ]);
    assertStatus(r, 200, "batch");
    assertEquals(r.data.map((x: { status: number }) => x.status), [
      201,
      200,
      204,
      201,
    ]);
    for (
      const [i, id] of [[0, r.data[0].data.id], [1, a.data.id], [3, fresh]]
    ) {
      const got = await s.request("GET", url("orders", id));
      assertEquals(r.data[i], {
        status: r.data[i].status,
        data: got.data,
        error: "",
      });
    }
    assertEquals(r.data[1].data.qty, 7);
    assertEquals(r.data[2], { status: 204, data: null, error: "" });
    assertStatus(
      await s.request("GET", url("orders", b.data.id)),
      404,
      "deleted",
    );
  });

  await t.step("after-hooks run once the whole batch committed", async () => {
    const before = await rowCount(s, "orders");
    const r = await batch(s, [
      { method: "POST", url: url("orders"), body: { title: "x1" } },
      { method: "POST", url: url("orders"), body: { title: "x2" } },
      { method: "POST", url: url("orders"), body: { title: "x3" } },
    ]);
    assertStatus(r, 200, "batch");
    const all = before + 3;
    assertEquals(await notes(s, "after x"), [
      `after x1 saw ${all}`,
      `after x2 saw ${all}`,
      `after x3 saw ${all}`,
    ]);
  });

  await t.step(
    "the first request to fail is the answer, even when later ones ran (creates sent ahead)",
    async () => {
      // On PostgreSQL a batch sends a create with nothing to wait for
      // ahead, without its answer: a conflict found after later requests
      // ran must still fail the batch as request 1 alone would, and no
      // hook after it may run (its effects can reach beyond the database).
      const taken = await s.request("POST", url("codes"), {
        body: { code: "taken" },
      });
      assertStatus(taken, 201, "the code taken before");
      const alone = await s.request("POST", url("codes"), {
        body: { code: "taken" },
      });
      assertStatus(alone, 409, "a conflict alone");
      const probe = async () =>
        (await s.request("GET", "/api/batch-hook-runs")).data.runs as number;
      const runs = await probe();
      const codes = await rowCount(s, "codes");
      const cases: [string, Req[]][] = [
        ["a later request invalid", [
          { method: "POST", url: url("codes"), body: { code: "first" } },
          { method: "POST", url: url("codes"), body: { code: "taken" } },
          { method: "POST", url: url("codes"), body: {} },
        ]],
        ["a later request with a before-hook", [
          { method: "POST", url: url("codes"), body: { code: "second" } },
          { method: "POST", url: url("codes"), body: { code: "taken" } },
          { method: "POST", url: url("tickets"), body: { title: "hooked" } },
        ]],
        ["later creates sent too", [
          { method: "POST", url: url("codes"), body: { code: "third" } },
          { method: "POST", url: url("codes"), body: { code: "taken" } },
          { method: "POST", url: url("codes"), body: { code: "fourth" } },
          { method: "POST", url: url("codes"), body: { code: "fifth" } },
        ]],
      ];
      for (const [name, requests] of cases) {
        const r = await batch(s, requests);
        assertStatus(r, 409, name);
        assertEquals(r.body, {
          status: 409,
          data: { index: 1, response: envelope(alone) },
          error: `Cannot run batch: request 1 failed: ${alone.error}`,
        }, name);
      }
      assertEquals(await probe(), runs, "no hook ran after the conflict");
      assertEquals(await rowCount(s, "codes"), codes, "nothing applied");
      const id = crypto.randomUUID();
      const ok = await batch(s, [
        { method: "PUT", url: url("codes"), body: { id, code: "mine" } },
        { method: "POST", url: url("codes"), body: { code: "beside" } },
        { method: "PATCH", url: url("codes", id), body: { code: "mine 2" } },
        { method: "POST", url: url("tickets"), body: { title: "hooked" } },
      ]);
      assertStatus(ok, 200, "creates sent ahead, then requests that read them");
      assertEquals(
        ok.data.map((a: { status: number }) => a.status),
        [201, 201, 200, 201],
      );
      assertEquals(ok.data[2].data.code, "mine 2", "the PATCH saw the PUT");
      assertEquals(await probe(), runs + 1, "the hook ran once");
      assertEquals(await rowCount(s, "codes"), codes + 2);
    },
  );

  await t.step(
    "a failure at the last request leaves nothing: no row, no hook effect, no file, no event",
    async () => {
      const withFile = async (title: string) => {
        const r = await sendForm(s, "POST", url("docs"), [
          { name: "title", value: title },
          { name: "attachment", filename: `${title}.txt`, data: title },
        ]);
        assertStatus(r, 201, `doc ${title}`);
        return r.data;
      };
      const kept = await withFile("kept");
      const gone = await withFile("gone");
      const c = await subscribe(s, ["orders", "docs", "audit"], {
        token: admin,
      });
      const counts = [
        await rowCount(s, "orders"),
        await rowCount(s, "docs"),
        await rowCount(s, "audit"),
        await counter(s),
      ];
      const files = await filesSnapshot(s);
      const json = {
        requests: [
          { method: "POST", url: url("docs"), body: { title: "with file" } },
          {
            method: "PATCH",
            url: url("docs", kept.id),
            body: { title: "changed" },
          },
          { method: "DELETE", url: url("docs", gone.id) },
          { method: "POST", url: url("orders"), body: { title: "fine" } },
          {
            method: "POST",
            url: url("orders"),
            body: { title: "hook refuses" },
          },
        ],
      };
      const r = await sendForm(s, "POST", "/api/v1/batch", [
        { name: "@json", value: JSON.stringify(json) },
        {
          name: "requests.0.attachment",
          filename: "a.txt",
          data: "hello",
          type: "text/plain",
        },
        {
          name: "requests.1.attachment",
          filename: "b.txt",
          data: "replacement",
          type: "text/plain",
        },
      ]);
      assertStatus(r, 409, "the batch fails with the request's status");
      const single = "Cannot create order: the hook refuses";
      assertEquals(r.body, {
        status: 409,
        data: {
          index: 4,
          response: { status: 409, data: null, error: single },
        },
        error: `Cannot run batch: request 4 failed: ${single}`,
      });
      assertEquals([
        await rowCount(s, "orders"),
        await rowCount(s, "docs"),
        await rowCount(s, "audit"),
        await counter(s),
      ], counts);
      assertEquals(await filesSnapshot(s), files, "no file left, none gone");
      for (const doc of [kept, gone]) {
        const got = await s.request("GET", url("docs", doc.id));
        assertEquals(got.data, doc, "the doc as it was");
        const f = await getFile(s, `/api/files/docs/${doc.attachment}`);
        assertEquals(f.text, doc.title, "its file still served");
      }
      const [events] = await upToMark(s, [c]);
      assertEquals(events, [], "no realtime event");
      c.close();
    },
  );

  await t.step(
    "a rule-denied request fails the batch with its own answer, no more",
    async () => {
      const ada = await userOf(s, "members", "ada@example.com");
      const bob = await userOf(s, "members", "bob@example.com");
      const secret = await s.request("POST", url("secrets"), {
        token: ada.token,
        body: { owner: ada.id, text: "ada's" },
      });
      assertStatus(secret, 201, "ada's secret");
      const patch = { text: "bob was here" };
      const alone = await s.request("PATCH", url("secrets", secret.data.id), {
        token: bob.token,
        body: patch,
      });
      assertStatus(alone, 404, "alone");
      const before = await rowCount(s, "orders");
      const r = await batch(s, [
        { method: "POST", url: url("orders"), body: { title: "bob's" } },
        { method: "PATCH", url: url("secrets", secret.data.id), body: patch },
      ], bob.token);
      assertEquals(r.body, {
        status: 404,
        data: { index: 1, response: envelope(alone) },
        error: `Cannot run batch: request 1 failed: ${alone.error}`,
      });
      assertEquals(await rowCount(s, "orders"), before);
      const g = await s.request("GET", url("secrets", secret.data.id), {
        token: ada.token,
      });
      assertEquals(g.data.text, "ada's");
      // A guest refused by the rule mode: the 401 a single write gets.
      const change = { email: "x@example.com" };
      const guest = await s.request("PATCH", url("members", ada.id), {
        body: change,
      });
      assertStatus(guest, 401, "a guest alone");
      const gb = await batch(s, [
        { method: "POST", url: url("orders"), body: { title: "guest's" } },
        { method: "PATCH", url: url("members", ada.id), body: change },
      ]);
      assertEquals(gb.body, {
        status: 401,
        data: { index: 1, response: envelope(guest) },
        error: `Cannot run batch: request 1 failed: ${guest.error}`,
      });
    },
  );

  await t.step(
    "account checks: changing one's own password needs oldPassword",
    async () => {
      const cy = await userOf(s, "members", "cy@example.com");
      const change = { password: "new-password-1" };
      const alone = await s.request("PATCH", url("members", cy.id), {
        token: cy.token,
        body: change,
      });
      assertStatus(alone, 400, "alone, without oldPassword");
      const r = await batch(s, [
        { method: "PATCH", url: url("members", cy.id), body: change },
      ], cy.token);
      assertEquals(r.body?.data, { index: 0, response: envelope(alone) });
      const ok = await batch(s, [{
        method: "PATCH",
        url: url("members", cy.id),
        body: { ...change, oldPassword: "password-123" },
      }], cy.token);
      assertStatus(ok, 200, "with oldPassword");
      const login = await s.request("POST", "/api/v1/auth/members/login", {
        body: { identity: "cy@example.com", password: "new-password-1" },
        headers: { "x-forwarded-for": "203.0.113.5" },
      });
      assertStatus(login, 200, "the new password works");
    },
  );

  await t.step(
    "upserts: create, then update; two racing for one id",
    async () => {
      const id = crypto.randomUUID();
      const put = (title: string) =>
        batch(s, [{ method: "PUT", url: url("orders"), body: { id, title } }]);
      const first = await put("first");
      assertStatus(first, 200, "first upsert");
      assertEquals([first.data[0].status, first.data[0].data.id], [201, id]);
      const second = await put("second");
      assertEquals([second.data[0].status, second.data[0].data.title], [
        200,
        "second",
      ]);
      // Racers on an entity without hooks (a hook's write would queue
      // them on its row lock), a few rounds.
      for (let round = 0; round < 3; round++) {
        const race = crypto.randomUUID();
        const [x, y] = await Promise.all(["x", "y"].map((title) =>
          batch(s, [
            { method: "POST", url: url("docs"), body: { title: "beside" } },
            { method: "PUT", url: url("docs"), body: { id: race, title } },
          ])
        ));
        assertStatus(x, 200, "racer x");
        assertStatus(y, 200, "racer y");
        assertEquals(
          [x.data[1].status, y.data[1].status].sort(),
          [200, 201],
          "one created, the other updated",
        );
        const rows = await s.app.storage.query(
          `SELECT COUNT(*) AS n FROM "docs" WHERE "id" = ?`,
          [race],
        );
        assertEquals(Number(rows[0].n), 1);
      }
      const bad = await batch(s, [
        {
          method: "PUT",
          url: url("orders"),
          body: { id: "not-a-uuid", title: "t" },
        },
      ]);
      assertEquals([bad.status, bad.data?.index], [400, 0]);
    },
  );

  await t.step(
    "batches beside concurrent single writes: no deadlock, no lost update",
    async () => {
      const orders = await rowCount(s, "orders");
      const n = await counter(s);
      const shared = await s.request("POST", url("orders"), {
        body: { title: "shared", qty: 0 },
      });
      const batches = Array.from({ length: 4 }, (_, k) =>
        batch(s, [
          ...Array.from({ length: 4 }, (_, i) => ({
            method: "POST",
            url: url("orders"),
            body: { title: `b${k}.${i}` },
          })),
          {
            method: "PATCH",
            url: url("orders", shared.data.id),
            body: { qty: k },
          },
        ]));
      const singles = Array.from(
        { length: 8 },
        (_, i) =>
          i % 2
            ? s.request("POST", url("orders"), { body: { title: `s${i}` } })
            : s.request("PATCH", url("orders", shared.data.id), {
              body: { qty: 100 + i },
            }),
      );
      const all = await Promise.all([...batches, ...singles]);
      for (const r of all) assert(r.status < 300, `${r.status}: ${r.text}`);
      // 1 shared + 16 in batches + 4 singles, each counted by its hook.
      assertEquals(await rowCount(s, "orders"), orders + 21);
      assertEquals(await counter(s), n + 21);
      assertStatus(await s.request("GET", "/api/v1/health"), 200, "health");
    },
  );

  await t.step(
    "multipart batch with files; a replaced file goes after commit",
    async () => {
      const old = await sendForm(s, "POST", url("docs"), [
        { name: "title", value: "old" },
        {
          name: "attachment",
          filename: "old.txt",
          data: "old",
          type: "text/plain",
        },
      ]);
      assertStatus(old, 201, "doc with a file");
      const json = {
        requests: [
          { method: "POST", url: url("docs"), body: { title: "new" } },
          {
            method: "PATCH",
            url: url("docs", old.data.id),
            body: { title: "replaced" },
          },
        ],
      };
      const r = await sendForm(s, "POST", "/api/v1/batch", [
        { name: "@json", value: JSON.stringify(json) },
        {
          name: "requests.0.attachment",
          filename: "n.txt",
          data: "new one",
          type: "text/plain",
        },
        {
          name: "requests.1.attachment",
          filename: "r.txt",
          data: "second",
          type: "text/plain",
        },
      ]);
      assertStatus(r, 200, "multipart batch");
      const [made, changed] = r.data;
      assertEquals([made.status, changed.status], [201, 200]);
      const got = await getFile(s, `/api/files/docs/${made.data.attachment}`);
      assertEquals([got.status, got.text], [200, "new one"]);
      const swapped = await getFile(
        s,
        `/api/files/docs/${changed.data.attachment}`,
      );
      assertEquals(swapped.text, "second");
      const names = await filesSnapshot(s);
      assert(
        !names.some((n) => n.endsWith(old.data.attachment)),
        "the replaced file is removed",
      );
      const wrong = await sendForm(s, "POST", "/api/v1/batch", [
        { name: "@json", value: JSON.stringify(json) },
        {
          name: "requests.1.title",
          filename: "t.txt",
          data: "x",
          type: "text/plain",
        },
      ]);
      assertEquals([wrong.status, wrong.data?.index], [400, 1]);
      assertEquals(
        await filesSnapshot(s),
        names,
        "no file from a refused part",
      );
    },
  );

  await t.step("limits: 101 requests, malformed requests", async () => {
    const many = Array.from({ length: 101 }, () => ({
      method: "POST",
      url: url("orders"),
      body: { title: "many" },
    }));
    const r = await batch(s, many);
    assertStatus(r, 400, "101 requests");
    assert(r.error.includes("at most 100"), r.error);
    const cases: [Req, string][] = [
      [{ method: "GET", url: url("orders") }, "method"],
      [{ method: "PATCH", url: url("orders") }, "<id>"],
      [{ method: "POST", url: "/api/v1/schemas" }, "url"],
      [{ method: "POST", url: `${url("orders")}?expand=x` }, "query"],
      [{ method: "PUT", url: url("orders"), body: { title: "t" } }, "id"],
      [{ method: "POST", url: url("nope") }, "entity"],
    ];
    for (const [req, word] of cases) {
      const bad = await batch(s, [
        { method: "POST", url: url("orders"), body: { title: "ok" } },
        req,
      ]);
      assertEquals(bad.data?.index, 1, bad.text);
      assert(bad.error.includes(word), `${word}: ${bad.error}`);
    }
    assertStatus(await batch(s, []), 400, "empty");
  });

  await t.step(
    "a sign-up inside a batch counts for the sign-up throttle",
    async () => {
      const ip = "203.0.113.77";
      const headers = { "x-forwarded-for": ip };
      // Nine sign-ups from this address already (limit: 10 a minute).
      for (let i = 0; i < 9; i++) await s.app.limiter.hit(`signup:${ip}`, 10);
      const members = await rowCount(s, "members");
      const signup = (email: string) => ({
        method: "POST",
        url: url("members"),
        body: { email, password: "password-123" },
      });
      const r = await s.request("POST", "/api/v1/batch", {
        headers,
        body: {
          requests: [signup("t1@example.com"), signup("t2@example.com")],
        },
      });
      assertStatus(r, 429, "the second sign-up is one too many");
      assertEquals(r.data.index, 1);
      assert(r.headers.get("retry-after"), "Retry-After");
      assertEquals(await rowCount(s, "members"), members);
    },
  );
}

forEachDb("batch: one transaction of record writes", async (t, db) => {
  await withScripts(db, { "hooks.js": HOOKS }, async (s) => {
    await cases(t, s);
  }, { trustProxy: true });
});

forEachDb(
  "batch: past the statement timeout, rolled back whole",
  async (_t, db) => {
    await withScripts(db, { "hooks.js": HOOKS }, async (s) => {
      await makeEntity(s, { name: "slow", fields: [text("title")] });
      const alone = await s.request("POST", url("slow"), {
        body: { title: "a" },
      });
      assertStatus(alone, 201, "one slow write fits");
      const r = await batch(s, [
        { method: "POST", url: url("slow"), body: { title: "b" } },
        { method: "POST", url: url("slow"), body: { title: "c" } },
      ]);
      assertStatus(r, 503, "the batch took too long");
      assert(r.error.startsWith("Cannot run batch: it ran longer"), r.error);
      assertEquals(await rowCount(s, "slow"), 1);
    }, { statementTimeout: 0.7, realtime: false });
  },
);
