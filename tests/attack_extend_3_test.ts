/**
 * Attacks on the library side of extensions: `{ as }` on every Entity
 * operation must behave as the records API does for that caller; a
 * before-hook's changes are validated again and cannot write what the
 * server owns (id, created, file names) nor an unhashed password; a
 * password changed inside a hook does not stop the database; the `--dev`
 * links live in a directory no other local user can enter.
 *
 * @module
 */

import assert from "node:assert/strict";
import { GUEST } from "../lib/caller.ts";
import { MoonbaseError } from "../lib/errors.ts";
import { forEachDb, type Reply } from "./_server.ts";
import { makeEntity, userOf, withScripts } from "./_extend_fixtures.ts";

/** `p`, or "timeout" after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), ms)),
  ]).finally(() => clearTimeout(timer));
}

const text = (name: string) => ({ name, type: "string" });
const rule = (mode: string, expr = "") => ({ mode, expr });

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
  "attack: remove(id, { as }) follows the delete rule, as the API does",
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
  "attack: { as } refuses what the API refuses (views, system, no API)",
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

/** A hook that tries to write what the server owns, on every create. */
const SERVER_KEYS = `
export default (app) => {
  app.onRecord("beforeCreate", "docs", (e) => {
    e.record.id = "00000000-0000-7000-8000-000000000001";
    e.record.created = "2000-01-01T00:00:00.000Z";
    e.record.updated = "2000-01-01T00:00:00.000Z";
    e.record.doc = "../../../../etc/passwd";
    e.record.t = "hooked";
  });
  app.onRecord("beforeCreate", "members", (e) => {
    e.record.password = "set-by-hook-123";
  });
  app.onRecord("beforeUpdate", "docs", (e) => {
    if (e.record.t === "bad") e.record.nope = 1;
    if (e.record.t === "long") e.record.t = 5;
  });
};
`;

forEachDb(
  "attack: a before-hook's changes cannot set server-owned values",
  async (t, db) => {
    await withScripts(db, { "keys.js": SERVER_KEYS }, async (s) => {
      await makeEntity(s, {
        name: "docs",
        fields: [text("t"), { name: "doc", type: "file" }],
      });
      await makeEntity(s, { name: "members", type: "auth", fields: [] });
      await t.step(
        "id, created, updated and file names stay the server's",
        async () => {
          const r = await s.request("POST", "/api/v1/entities/docs", {
            body: { t: "a" },
          });
          assert.equal(r.status, 201, r.text);
          assert.equal(r.data.t, "hooked");
          assert.notEqual(r.data.id, "00000000-0000-7000-8000-000000000001");
          assert.notEqual(r.data.created, "2000-01-01T00:00:00.000Z");
          assert.equal(r.data.doc ?? null, null);
          const [row] = await s.app.storage.query(`SELECT * FROM "docs"`);
          assert.equal(row.doc ?? null, null, "stored file name");
        },
      );
      await t.step("a password a hook sets is stored hashed", async () => {
        const r = await s.request("POST", "/api/v1/entities/members", {
          body: { email: "m@example.com", password: "client-pass-123" },
        });
        assert.equal(r.status, 201, r.text);
        const [row] = await s.app.storage.query(
          `SELECT "password" FROM "members"`,
        );
        assert.notEqual(row.password, "set-by-hook-123");
        assert.notEqual(row.password, "client-pass-123");
        assert.match(String(row.password), /^scrypt\$/);
        const login = await s.request("POST", "/api/v1/auth/members/login", {
          body: { identity: "m@example.com", password: "set-by-hook-123" },
        });
        assert.equal(login.status, 200, login.text);
      });
      await t.step("changes are validated again (400, not 500)", async () => {
        const rec = await s.app.schemas.get("docs")!.create({ t: "x" });
        for (const t of ["bad", "long"]) {
          const r: Reply = await s.request(
            "PATCH",
            `/api/v1/entities/docs/${rec.id}`,
            {
              body: { t },
            },
          );
          assert.equal(r.status, 400, r.text);
        }
      });
    });
  },
);

/** Changing a thing changes its owner's password, in the same write. */
const NESTED_PASSWORD = `
export default (app) => {
  app.onRecord("beforeUpdate", "things", async (e) => {
    if (e.record.reset) {
      await app.entities.get("members").update(e.record.owner, { password: "reset-by-hook-1" });
    }
    if (e.record.refuse) throw app.error(409, "Cannot update thing: refused");
  });
};
`;

// Found in review (high on SQLite: one request stops the database for good, fixed; the test fails without the fix): a
// password changed by an Entity operation nested in a before-hook ends the
// user's sessions through `EntityEnv.passwordChanged` →
// Revocations.revokeUser, which writes `mb_cutoffs` in a transaction of its
// own on the app's storage (lib/auth/revocation.ts), not in the write the
// hook runs in. On SQLite that transaction waits for the open one, which
// waits for the hook: the request never answers, and the whole database
// with it. On PostgreSQL the revocation commits on its own even when the
// outer write is refused (sessions end for a password change that never
// happened). Fix: queue the revocation on the write scope and run it after
// the outermost commit (with the nested after-hooks and file removals).
forEachDb(
  "attack: a password changed inside a before-hook never hangs the database",
  async (t, db) => {
    await withScripts(db, { "pw.js": NESTED_PASSWORD }, async (s) => {
      await makeEntity(s, { name: "members", type: "auth", fields: [] });
      await makeEntity(s, {
        name: "things",
        fields: [
          text("owner"),
          { name: "reset", type: "bool" },
          { name: "refuse", type: "bool" },
        ],
      });
      const m = await userOf(s, "members", "victim@example.com");
      const thing = await s.app.schemas.get("things")!.create({ owner: m.id });
      await t.step({
        name: "a refused write answers and leaves the user's sessions alone",
        fn: async () => {
          const r = await within(
            s.request("PATCH", `/api/v1/entities/things/${thing.id}`, {
              body: { reset: true, refuse: true },
            }),
            5000,
          );
          assert.notEqual(r, "timeout", "the write hung");
          assert.equal((r as Reply).status, 409, (r as Reply).text);
          const h = await within(s.request("GET", "/api/v1/health"), 3000);
          assert.notEqual(h, "timeout", "the database hung");
          const me = await s.request(
            "GET",
            `/api/v1/entities/members/${m.id}`,
            {
              token: m.token,
            },
          );
          assert.equal(
            me.status,
            200,
            "the session ended for a password change that rolled back",
          );
        },
      });
    });
  },
);

forEachDb(
  "attack: the --dev links live in a directory only this user can enter",
  async (t, db) => {
    const before = new Set<string>();
    for await (const e of Deno.readDir(tmpDir())) before.add(e.name);
    await withScripts(db, { "a.js": "export default () => {};" }, async () => {
      await t.step("owner-only, links to the scripts directory", async () => {
        let found = 0;
        for await (const e of Deno.readDir(tmpDir())) {
          if (!e.name.startsWith("moonbase_scripts_") || before.has(e.name)) {
            continue;
          }
          const st = await Deno.lstat(`${tmpDir()}/${e.name}`);
          assert.ok(st.isDirectory);
          assert.equal(
            (st.mode ?? 0) & 0o077,
            0,
            `mode ${(st.mode ?? 0).toString(8)}`,
          );
          found++;
        }
        assert.ok(found >= 1, "a link directory exists in --dev");
      });
    }, { dev: true });
  },
);

function tmpDir(): string {
  return Deno.env.get("TMPDIR") ?? "/tmp";
}

/** "Insert or ignore" of a tag in a hook: a duplicate is caught and ignored. */
const TAGS = `
export default (app) => {
  app.onRecord("beforeCreate", "posts", async (e) => {
    try {
      await app.entities.get("tags").create({ name: e.record.tag });
    } catch { /* the tag exists */ }
  });
};
`;

// Found in review (medium, PostgreSQL only, fixed; the test fails without the fix): a record operation nested in a
// before-hook joins the write without a savepoint (lib/records/
// write_scope.ts current(): `transaction: (fn) => fn(tx)`). When it fails
// and the hook catches the error (the usual "create the tag unless it
// exists"), PostgreSQL has already aborted the whole transaction: the
// client's write then fails, answered as a 409 "record must be unique"
// about a field it never sent; on SQLite the same script works (a failed
// statement undoes only itself, but a nested operation of several
// statements keeps its first ones). Fix: run a nested `transaction` as a
// savepoint of the write (postgres.js `tx.savepoint(fn)`, SQLite
// `SAVEPOINT`/`ROLLBACK TO`), so a caught failure undoes exactly the nested
// operation on both databases.
forEachDb(
  "attack: a caught failure of a nested record operation leaves the write going",
  async (t, db) => {
    await withScripts(db, { "tags.js": TAGS }, async (s) => {
      await makeEntity(s, {
        name: "tags",
        fields: [{ name: "name", type: "string", unique: true }],
      });
      await makeEntity(s, { name: "posts", fields: [text("tag")] });
      await t.step({
        name: "the second post with the same tag is created",
        fn: async () => {
          for (const i of [1, 2]) {
            const r = await s.request("POST", "/api/v1/entities/posts", {
              body: { tag: "news" },
            });
            assert.equal(r.status, 201, `post ${i}: ${r.text}`);
          }
        },
      });
    });
  },
);
