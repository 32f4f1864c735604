/**
 * The rule-mode table (docs/guide/rules.md): every operation
 * (list, get, add, update, delete) under every mode (public, auth, "" =
 * admin-only, custom `true`, custom `false`, and the cookbook's custom
 * `auth.entity == "<the self caller's entity>"`) for every kind of caller
 * (guest, a user of this auth entity, a user of another auth entity, an
 * admin), on a `base` entity (callers from the auth entities `members` and
 * `outsiders`) and on an `auth` entity (the "self" caller is one of its own
 * users), on both databases. Each cell checks the status and the data: list
 * items, the record read, the record created or updated (and stored), and
 * that a refused write changed nothing / a refused delete kept the record.
 *
 * @module
 */

import {
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { seedUser as seedStoredUser } from "./_server.ts";

type Op = "list" | "get" | "add" | "update" | "delete";
type Caller = "guest" | "self" | "other" | "admin";
type Kind = "base" | "auth";

interface RuleMode {
  /** Used in entity names and step names. */
  label: string;
  rule: { mode: string; expr: string };
  /** For rules naming the caller's auth entity: the expression per entity. */
  exprFor?: (kind: Kind, entity: string) => string;
}

const MODES: readonly RuleMode[] = [
  { label: "public", rule: { mode: "public", expr: "" } },
  { label: "auth", rule: { mode: "auth", expr: "" } },
  { label: "admin", rule: { mode: "", expr: "" } },
  { label: "true", rule: { mode: "custom", expr: "true" } },
  { label: "false", rule: { mode: "custom", expr: "false" } },
  // Cookbook "users of one auth entity only": the self caller's entity.
  {
    label: "entity",
    rule: { mode: "custom", expr: "" },
    exprFor: (kind, entity) =>
      `auth.entity == "${kind === "base" ? "members" : entity}"`,
  },
];
const OPS: readonly Op[] = ["list", "get", "add", "update", "delete"];
const CALLERS: readonly Caller[] = ["guest", "self", "other", "admin"];
const KINDS: readonly Kind[] = ["base", "auth"];
const PASSWORD = "password-123";

/** The status policy of docs/guide/rules.md: 0 means "allowed". */
function expectedDenial(mode: RuleMode, caller: Caller): 0 | 401 | 403 {
  if (caller === "admin") return 0;
  switch (mode.label) {
    case "public":
    case "true":
      return 0;
    case "auth":
      return caller === "guest" ? 401 : 0;
    case "entity":
      return caller === "guest" ? 401 : caller === "other" ? 403 : 0;
    default: // "" (admin-only) and custom false
      return caller === "guest" ? 401 : 403;
  }
}

const SUCCESS: Readonly<Record<Op, number>> = {
  list: 200,
  get: 200,
  add: 201,
  update: 200,
  delete: 204,
};

interface Rec {
  id: string;
  created?: string;
  updated: string;
  title?: string;
  name?: string;
  email?: string;
  password?: unknown;
}

let ipCounter = 0;
/** A distinct client address per login (5 logins/min per IP). */
function nextIp(): string {
  ipCounter++;
  return `10.9.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

async function login(
  s: TestServer,
  entity: string,
  email: string,
): Promise<{ token: string; id: string }> {
  const r = await s.request("POST", `/api/v1/auth/${entity}/login`, {
    body: { identity: email, password: PASSWORD },
    headers: { "x-forwarded-for": nextIp() },
  });
  if (r.status !== 200) {
    throw new Error(`login ${entity}/${email}: ${r.status} ${r.text}`);
  }
  return { token: r.data.token, id: r.data.user.id };
}

async function seedUser(
  s: TestServer,
  entity: string,
  values: Record<string, string>,
): Promise<Rec> {
  return (await seedStoredUser(s, entity, values, PASSWORD)) as unknown as Rec;
}

/** A token for a user, issued by the server's session service. */
async function tokenOf(
  s: TestServer,
  entity: string,
  user: Rec,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  const rec = await e.read(user.id);
  return (await s.app.sessions.issue(e, rec!)).token;
}

/** Collects mismatches of one table cell group instead of stopping at the first. */
class Cells {
  problems: string[] = [];
  check(cond: boolean, msg: string): void {
    if (!cond) this.problems.push(msg);
  }
  status(r: Reply, expected: number, msg: string): boolean {
    const ok = r.status === expected &&
      (r.body === null || r.body.status === r.status);
    if (!ok) {
      this.problems.push(
        `${msg}: expected ${expected}, got ${r.status} ${r.text.slice(0, 200)}`,
      );
    }
    return ok;
  }
  /** A refusal carries an error message and no record data. */
  denied(r: Reply, expected: number, msg: string): void {
    if (!this.status(r, expected, msg)) return;
    this.check(
      typeof r.error === "string" && r.error.length > 0,
      `${msg}: refusal without error message`,
    );
    this.check(
      r.data === null || r.data === undefined ||
        (typeof r.data === "object" && !("id" in r.data) &&
          !("items" in r.data)),
      `${msg}: refusal leaks data ${JSON.stringify(r.data)}`,
    );
  }
  done(): void {
    if (this.problems.length) {
      throw new Error(
        `${this.problems.length} mismatch(es):\n  ${
          this.problems.join("\n  ")
        }`,
      );
    }
  }
}

let addSeq = 0;

/** Body of a new record of a table entity. */
function newBody(
  kind: Kind,
  entity: string,
  tag: string,
): Record<string, string> {
  return kind === "base" ? { title: tag } : {
    email: `${tag}.${entity}@example.com`,
    password: PASSWORD,
    name: tag,
  };
}

/** The field a test value lives in. */
function valueOf(kind: Kind, rec: Rec): string | undefined {
  return kind === "base" ? rec.title : rec.name;
}

function fieldName(kind: Kind): "title" | "name" {
  return kind === "base" ? "title" : "name";
}

forEachDb("rule modes table", async (t, db) => {
  const s = await startServer(db, { trustProxy: true });
  try {
    const admin = await s.adminToken();
    // Two auth entities whose users are the "self"/"other" callers of the
    // base table; the auth table uses its own users as "self".
    const users = new Map<string, Rec>();
    for (const name of ["members", "outsiders"]) {
      const r = await s.request("POST", "/api/v1/schemas", {
        token: admin,
        body: {
          name,
          type: "auth",
          fields: [{ name: "name", type: "string" }],
        },
      });
      if (r.status !== 201) throw new Error(`schema ${name}: ${r.text}`);
      users.set(
        name,
        await seedUser(s, name, { email: `u@${name}.example.com` }),
      );
    }
    // One real login (the route is covered elsewhere; scrypt is slow here).
    const member = await login(s, "members", "u@members.example.com");
    const outsider = {
      token: await tokenOf(s, "outsiders", users.get("outsiders")!),
    };

    for (const kind of KINDS) {
      for (const mode of MODES) {
        await t.step(`${kind} entity, mode ${mode.label}`, async () => {
          const cells = new Cells();
          const entity = `${kind}_${mode.label}`;
          const path = `/api/v1/entities/${entity}`;
          const rule = mode.exprFor
            ? { mode: "custom", expr: mode.exprFor(kind, entity) }
            : mode.rule;
          const rules = Object.fromEntries(OPS.map((op) => [op, rule]));
          const r = await s.request("POST", "/api/v1/schemas", {
            token: admin,
            body: kind === "base"
              ? {
                name: entity,
                type: "base",
                fields: [{ name: "title", type: "string" }],
                rules,
              }
              : {
                name: entity,
                type: "auth",
                fields: [{ name: "name", type: "string" }],
                rules,
              },
          });
          if (r.status !== 201) throw new Error(`schema: ${r.text}`);
          if (
            JSON.stringify(r.data.rules) !==
              JSON.stringify(
                rules,
              )
          ) {
            throw new Error(
              `rules not stored: ${JSON.stringify(r.data.rules)}`,
            );
          }

          // Seed (as admin): a fixed record, and per caller one record to
          // update and one to delete.
          const seed = async (tag: string): Promise<Rec> => {
            if (kind === "auth") {
              const { password: _, ...values } = newBody(kind, entity, tag);
              return await seedUser(s, entity, values);
            }
            const c = await s.request("POST", path, {
              token: admin,
              body: newBody(kind, entity, tag),
            });
            if (c.status !== 201) throw new Error(`seed ${tag}: ${c.text}`);
            return c.data as Rec;
          };
          const fixed = await seed("fixed");
          const toUpdate = new Map<Caller, Rec>();
          const toDelete = new Map<Caller, Rec>();
          for (const c of CALLERS) {
            toUpdate.set(c, await seed(`u-${c}`));
            toDelete.set(c, await seed(`d-${c}`));
          }
          const tokens: Record<Caller, string | undefined> = {
            guest: undefined,
            self: member.token,
            other: outsider.token,
            admin,
          };
          const seeded = [fixed, ...toUpdate.values(), ...toDelete.values()];
          if (kind === "auth") {
            // The entity's own user is the "self" caller.
            const me = await seed("self");
            seeded.push(me);
            tokens.self = await tokenOf(s, entity, me);
          }
          const allIds = seeded.map((x) => x.id).sort();

          // Reads first, while the table holds exactly the seeded rows.
          for (const caller of CALLERS) {
            const token = tokens[caller];
            const denial = expectedDenial(mode, caller);
            const where = `${entity} ${caller}`;
            const list = await s.request("GET", `${path}?limit=500`, { token });
            if (denial) cells.denied(list, denial, `${where} list`);
            else if (cells.status(list, 200, `${where} list`)) {
              const items = list.data.items as Rec[];
              cells.check(
                JSON.stringify(items.map((x) => x.id).sort()) ===
                  JSON.stringify(allIds),
                `${where} list: items ${items.length} != seeded ${allIds.length}`,
              );
              cells.check(
                list.data.items_count === allIds.length,
                `${where} list: items_count ${list.data.items_count}`,
              );
              cells.check(
                items.every((x) => !("password" in x)),
                `${where} list: password returned`,
              );
              const f = items.find((x) => x.id === fixed.id);
              cells.check(
                f !== undefined && valueOf(kind, f) === "fixed",
                `${where} list: fixed record content`,
              );
            }
            const get = await s.request("GET", `${path}/${fixed.id}`, {
              token,
            });
            if (denial) cells.denied(get, denial, `${where} get`);
            else if (cells.status(get, 200, `${where} get`)) {
              const rec = get.data as Rec;
              cells.check(
                rec.id === fixed.id && valueOf(kind, rec) === "fixed" &&
                  rec.created !== undefined && !("password" in rec),
                `${where} get: wrong record ${JSON.stringify(rec)}`,
              );
            }
          }

          // Writes: each caller touches its own records, so the callers run
          // side by side (creating an auth record hashes a password).
          await Promise.all(CALLERS.map(async (caller) => {
            const token = tokens[caller];
            const denial = expectedDenial(mode, caller);
            const where = `${entity} ${caller}`;
            const f = fieldName(kind);

            // add
            const tag = `new-${caller}`;
            const add = await s.request("POST", path, {
              token,
              body: newBody(kind, entity, tag),
              // Sign-ups are rate-limited per IP: each add from its own address.
              headers: { "x-forwarded-for": `10.77.0.${++addSeq % 250}` },
            });
            const probe = await s.request(
              "GET",
              `${path}?count=true&filter=${
                encodeURIComponent(`${f} == "${tag}"`)
              }`,
              { token: admin },
            );
            if (denial) {
              cells.denied(add, denial, `${where} add`);
              cells.check(
                probe.status === 200 && probe.data.total === 0,
                `${where} add: refused create stored a record (${
                  probe.text.slice(0, 200)
                })`,
              );
            } else if (cells.status(add, SUCCESS.add, `${where} add`)) {
              const rec = add.data as Rec;
              cells.check(
                typeof rec.id === "string" && valueOf(kind, rec) === tag &&
                  !("password" in rec),
                `${where} add: returned ${JSON.stringify(rec)}`,
              );
              const stored = await s.request("GET", `${path}/${rec.id}`, {
                token: admin,
              });
              cells.check(
                stored.status === 200 && valueOf(kind, stored.data) === tag,
                `${where} add: not stored (${stored.status})`,
              );
              cells.check(
                probe.data?.total === 1,
                `${where} add: ${probe.data?.total} records with ${tag}`,
              );
            }

            // update
            const target = toUpdate.get(caller)!;
            const upd = await s.request("PATCH", `${path}/${target.id}`, {
              token,
              body: { [f]: `upd-${caller}` },
            });
            const after = await s.request("GET", `${path}/${target.id}`, {
              token: admin,
            });
            if (denial) {
              cells.denied(upd, denial, `${where} update`);
              cells.check(
                after.status === 200 &&
                  valueOf(kind, after.data) === `u-${caller}` &&
                  after.data.updated === target.updated,
                `${where} update: refused update changed the record (${
                  after.text.slice(0, 200)
                })`,
              );
            } else if (cells.status(upd, SUCCESS.update, `${where} update`)) {
              cells.check(
                upd.data?.id === target.id &&
                  valueOf(kind, upd.data) === `upd-${caller}`,
                `${where} update: returned ${JSON.stringify(upd.data)}`,
              );
              cells.check(
                after.status === 200 &&
                  valueOf(kind, after.data) === `upd-${caller}`,
                `${where} update: not stored (${after.text.slice(0, 200)})`,
              );
            }

            // delete
            const victim = toDelete.get(caller)!;
            const del = await s.request("DELETE", `${path}/${victim.id}`, {
              token,
            });
            const gone = await s.request("GET", `${path}/${victim.id}`, {
              token: admin,
            });
            if (denial) {
              cells.denied(del, denial, `${where} delete`);
              cells.check(
                gone.status === 200 &&
                  valueOf(kind, gone.data) === `d-${caller}`,
                `${where} delete: refused delete removed the record (${gone.status})`,
              );
            } else if (cells.status(del, SUCCESS.delete, `${where} delete`)) {
              cells.check(del.text === "", `${where} delete: 204 with a body`);
              cells.check(
                gone.status === 404,
                `${where} delete: record still there (${gone.status})`,
              );
            }
          }));

          // The whole table, as the admin sees it at the end: every allowed
          // caller added one record and deleted one.
          const total = await s.request("GET", `${path}?count=true&limit=1`, {
            token: admin,
          });
          cells.check(
            total.status === 200 && total.data.total === allIds.length,
            `${entity}: total ${total.data?.total}, expected ${allIds.length}`,
          );
          cells.done();
        });
      }
    }

    await t.step(
      "system entity mb_admins is admin-only for users",
      async () => {
        const cells = new Cells();
        for (const token of [member.token, outsider.token]) {
          const r = await s.request("GET", "/api/v1/entities/mb_admins", {
            token,
          });
          cells.check(
            r.status === 403 || r.status === 404,
            `user list mb_admins: ${r.status} ${r.text.slice(0, 200)}`,
          );
          cells.check(
            !r.text.includes("admin@example.com"),
            "user list mb_admins leaks an admin email",
          );
          const w = await s.request("POST", "/api/v1/entities/mb_admins", {
            token,
            body: { email: "intruder@example.com", password: PASSWORD },
          });
          cells.check(
            w.status === 403 || w.status === 404,
            `user create in mb_admins: ${w.status} ${w.text.slice(0, 200)}`,
          );
        }
        const guest = await s.request("GET", "/api/v1/entities/mb_admins");
        cells.check(
          guest.status === 401 || guest.status === 404,
          `guest list mb_admins: ${guest.status}`,
        );
        cells.done();
      },
    );

    await t.step("server still healthy", async () => {
      const h = await s.request("GET", "/api/v1/health");
      if (h.status !== 200 || h.data.status !== "ok") {
        throw new Error(`health: ${h.text}`);
      }
    });
  } finally {
    await s.close();
  }
});
