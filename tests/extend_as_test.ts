/**
 * Entity operations `{ as }` a caller behave as the records API does for
 * that caller: a script acting `{ as }` runs the account checks the API runs
 * (a user's own password or email change needs `oldPassword`, each check
 * counting as a login attempt; sign-ups throttled per client address, one
 * count shared with the API; a list's rule sees its query as `req.query`);
 * `remove(id, { as })` follows the delete rule; `{ as }` refuses what the
 * API refuses (views, system entities, entities without an API).
 *
 * One server per database and test; the account-check steps run in order
 * (they share the address's sign-up and login counters).
 *
 * @module
 */

import assert from "node:assert/strict";
import { GUEST } from "../lib/caller.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { verifyPassword } from "../lib/auth/password.ts";
import { forEachDb, type Reply } from "./_server.ts";
import { makeEntity, userOf, withScripts } from "./_extend_fixtures.ts";

const text = (name: string) => ({ name, type: "string" });
const rule = (mode: string, expr = "") => ({ mode, expr });
const OWN = rule("custom", "auth.id == record.id");

const SCRIPT = `
export default (app) => {
  const members = () => app.entities.get("members");
  app.route("PATCH", "/api/me", async (ctx) => {
    const as = await ctx.auth();
    return await members().update(as.id, await ctx.req.json(), { as });
  });
  app.route("POST", "/api/join", async (ctx) =>
    await members().create(await ctx.req.json(), { as: await ctx.auth() }));
};
`;

/** `data.fields.oldPassword.code` of a 400 answer. */
function oldPasswordCode(r: Reply): unknown {
  const data = r.body?.data as
    | { fields?: { oldPassword?: { code?: string } } }
    | null;
  return data?.fields?.oldPassword?.code;
}

forEachDb(
  "{ as }: a script runs the API's account checks",
  async (t, db) => {
    await withScripts(db, { "account.js": SCRIPT }, async (s) => {
      await makeEntity(s, {
        name: "members",
        type: "auth",
        fields: [],
        rules: {
          list: OWN,
          get: OWN,
          add: rule("public"),
          update: OWN,
          delete: rule(""),
        },
      });
      const ada = await userOf(s, "members", "ada@example.com");
      const members = s.app.schemas.get("members")!;

      await t.step(
        "no oldPassword: 400 through the script, as through the API",
        async () => {
          for (
            const body of [{ password: "new-password-9" }, {
              email: "x@example.com",
            }]
          ) {
            const script = await s.request("PATCH", "/api/me", {
              token: ada.token,
              body,
            });
            const api = await s.request(
              "PATCH",
              `/api/v1/entities/members/${ada.id}`,
              {
                token: ada.token,
                body,
              },
            );
            for (
              const [via, r] of [["script", script], ["API", api]] as const
            ) {
              assert.equal(
                r.status,
                400,
                `${via} ${JSON.stringify(body)}: ${r.text}`,
              );
              assert.equal(oldPasswordCode(r), "required", `${via}: ${r.text}`);
            }
          }
          const row = await members.rowFromCols(ada.id, ["id"]);
          assert.equal(row?.email, "ada@example.com", "the email stayed");
        },
      );

      await t.step(
        "a wrong oldPassword is refused; the right one changes the password",
        async () => {
          const wrong = await s.request("PATCH", "/api/me", {
            token: ada.token,
            body: { password: "new-password-9", oldPassword: "wrong-pass-1" },
          });
          assert.equal(wrong.status, 400, wrong.text);
          assert.equal(oldPasswordCode(wrong), "invalid");
          const right = await s.request("PATCH", "/api/me", {
            token: ada.token,
            body: { password: "new-password-9", oldPassword: "password-123" },
          });
          assert.equal(right.status, 200, right.text);
          assert.equal(
            JSON.stringify(right.body).includes("oldPassword"),
            false,
          );
          const row = await members.rowFromCols(ada.id, ["id"]);
          assert.ok(
            await verifyPassword("new-password-9", String(row?.password)),
          );
        },
      );

      await t.step(
        "a program acting { as } the user (no request) needs oldPassword too",
        async () => {
          const bea = await userOf(s, "members", "bea@example.com");
          const err = await members.update(bea.id, {
            password: "new-password-9",
          }, {
            as: bea.auth,
          }).then(() => undefined, (e) => e);
          assert.ok(err instanceof MoonbaseError, String(err));
          assert.equal(err.code, "invalid");
          assert.equal(
            (err.data?.fields as Record<string, { code: string }>)?.oldPassword
              ?.code,
            "required",
          );
        },
      );

      await t.step(
        "list(query, { as }): rules see the query as req.query, as on the API",
        async () => {
          const open = rule("custom", 'req.query.limit == "2"');
          await makeEntity(s, {
            name: "notes",
            fields: [{ name: "t", type: "string" }],
            rules: {
              list: open,
              get: open,
              add: open,
              update: open,
              delete: open,
            },
          });
          const notes = s.app.schemas.get("notes")!;
          await notes.create({ t: "one" });
          const api = await s.request("GET", "/api/v1/entities/notes?limit=2");
          assert.equal(api.status, 200, api.text);
          const page = await notes.list("limit=2", { as: ada.auth });
          assert.equal(page.items.length, 1);
          const refused = await notes.list("limit=3", { as: ada.auth }).then(
            () => "ok",
            (e) => e instanceof MoonbaseError ? e.code : String(e),
          );
          assert.equal(refused, "forbidden");
        },
      );

      await t.step(
        "sign-ups through the script and the API share one count per address",
        async () => {
          // A sign-up is counted before its values are checked, so short
          // passwords (400, no hashing) use up the allowance as well.
          const bad = (i: number) => ({
            email: `n${i}@example.com`,
            password: "short",
          });
          const first = await s.request("POST", "/api/join", {
            body: { email: "joined@example.com", password: "joined-pass-1" },
          });
          assert.equal(first.status, 200, first.text); // a script value: 200
          for (let i = 0; i < 4; i++) {
            const r = await s.request("POST", "/api/join", { body: bad(i) });
            assert.equal(r.status, 400, `script sign-up ${i + 2}: ${r.text}`);
          }
          const api = await s.request("POST", "/api/v1/entities/members", {
            body: bad(10),
          });
          assert.equal(api.status, 400, api.text);
          assert.equal(
            api.headers.get("x-ratelimit-remaining"),
            "4",
            "five counted before",
          );
          for (let i = 0; i < 4; i++) {
            const r = await s.request("POST", "/api/join", {
              body: bad(20 + i),
            });
            assert.equal(r.status, 400, `script sign-up ${i + 7}: ${r.text}`);
          }
          const eleventh = await s.request("POST", "/api/join", {
            body: bad(30),
          });
          assert.equal(eleventh.status, 429, eleventh.text);
          assert.ok(eleventh.headers.get("retry-after"), "Retry-After");
          const twelfth = await s.request("POST", "/api/v1/entities/members", {
            body: bad(31),
          });
          assert.equal(twelfth.status, 429, twelfth.text);
        },
      );
    });
  },
);

/** The error code of a rejected promise ("ok" when it resolves). */
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return err instanceof MoonbaseError ? err.code : String(err);
  }
}

// Found in review (low, fixed; the test fails without the fix): `Entity.remove(id, { as })` reads the record first with
// `read(id, { as })` (lib/records/entity.ts remove()) to return it. Under
// the `get` rule, not the `delete` rule: a caller the API lets delete but
// not read (get admin-only, delete public) gets a 401/403 and nothing is
// deleted, and a caller whose get rule hides the record (per row) deletes
// it and gets `undefined`, which the method documents as "did not exist".
// Fix: return the record the delete itself removed — make
// `CallerAccess.remove` return `entity.remove`'s record (RecordService
// .remove already has it) instead of a separate read.
forEachDb(
  "{ as }: remove(id, { as }) follows the delete rule, as the API does",
  async (t, db) => {
    await withScripts(db, {}, async (s) => {
      await makeEntity(s, {
        name: "drop",
        fields: [text("t"), text("vis")],
        rules: {
          list: rule("public"),
          get: rule("custom", 'record.vis == "yes"'),
          add: rule("public"),
          update: rule("public"),
          delete: rule("public"),
        },
      });
      await makeEntity(s, {
        name: "blind",
        fields: [text("t")],
        rules: {
          list: rule(""),
          get: rule(""),
          add: rule("public"),
          update: rule("public"),
          delete: rule("public"),
        },
      });
      await t.step("the API lets a guest delete both", async () => {
        for (const name of ["drop", "blind"]) {
          const rec = await s.app.schemas.get(name)!.create({ t: "api" });
          const r = await s.request(
            "DELETE",
            `/api/v1/entities/${name}/${rec.id}`,
          );
          assert.equal(r.status, 204, `${name}: ${r.text}`);
        }
      });
      await t.step({
        name: "remove(id, { as: guest }) deletes too",
        fn: async () => {
          const blind = s.app.schemas.get("blind")!;
          const b = await blind.create({ t: "lib" });
          assert.equal(
            await codeOf(blind.remove(b.id as string, { as: GUEST })),
            "ok",
          );
          assert.equal(await blind.read(b.id as string), undefined, "deleted");
          const drop = s.app.schemas.get("drop")!;
          const d = await drop.create({ t: "lib", vis: "no" });
          const gone = await drop.remove(d.id as string, { as: GUEST });
          assert.equal(await drop.read(d.id as string), undefined, "deleted");
          assert.notEqual(
            gone,
            undefined,
            "a deleted record reads as 'did not exist'",
          );
        },
      });
    });
  },
);

forEachDb(
  "{ as }: refuses what the API refuses (views, system, no API)",
  async (t, db) => {
    await withScripts(db, {}, async (s) => {
      await makeEntity(s, {
        name: "hidden",
        fields: [text("t")],
        has_api: false,
      });
      const admin = await s.app.sessions.resolve(
        `Bearer ${await s.adminToken()}`,
      );
      const hidden = s.app.schemas.get("hidden")!;
      const rec = await hidden.create({ t: "x" });
      const admins = s.app.schemas.get("mb_admins")!;
      const cases: [string, () => Promise<unknown>, string][] = [
        [
          "list of an entity without API",
          () => hidden.list("", { as: admin }),
          "not_found",
        ],
        [
          "create in it",
          () => hidden.create({ t: "y" }, { as: admin }),
          "not_found",
        ],
        [
          "update in it",
          () => hidden.update(rec.id as string, { t: "z" }, { as: admin }),
          "not_found",
        ],
        [
          "remove in it",
          () => hidden.remove(rec.id as string, { as: admin }),
          "not_found",
        ],
        [
          "list of mb_admins",
          () => admins.list("", { as: admin }),
          "not_found",
        ],
        [
          "guest list of mb_admins",
          () => admins.list("", { as: GUEST }),
          "not_found",
        ],
      ];
      for (const [what, op, code] of cases) {
        await t.step(what, async () => assert.equal(await codeOf(op()), code));
      }
      await t.step("read in it: the entity is not found", async () => {
        assert.equal(
          await codeOf(hidden.read(rec.id as string, { as: admin })),
          "not_found",
        );
        assert.equal(
          (await hidden.read(rec.id as string))?.t,
          "x",
          "still there",
        );
      });
    });
  },
);
