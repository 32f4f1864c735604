/**
 * Fixtures of the rules and filter suites (rules and filters share one
 * expression language): users with roles, an owned `notes` entity, an
 * `items` entity with every scalar type and awkward values, and list helpers
 * that walk every page and check the page invariants.
 *
 * @module
 */

import {
  insertSeries,
  padded,
  type Reply,
  seedUser,
  type TestServer,
} from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";

/** Password of every seeded user. */
export const PASSWORD = "password-123";

/** A stored record as the API returns it. */
export interface Rec {
  id: string;
  created: string;
  updated: string;
  [field: string]: unknown;
}

/** One page of a list. */
export interface Page<R = Rec> {
  items: R[];
  items_count: number;
  limit: number;
  has_more: boolean;
  cursor: string | null;
  total?: number;
}

/** `encodeURIComponent`, short. */
export const enc = encodeURIComponent;

/** The ids of a list, in order. */
export function ids(list: readonly { id: string }[]): string[] {
  return list.map((r) => r.id);
}

/** Fails when a row appears twice in a walk over pages. */
export function noDuplicates(
  list: readonly { id: string }[],
  msg: string,
): void {
  if (new Set(ids(list)).size !== list.length) {
    fail(`${msg}: duplicate rows in pages`);
  }
}

/** A token issued by the server's session service. */
export async function tokenOf(
  s: TestServer,
  entity: string,
  id: string,
): Promise<string> {
  const e = s.app.schemas.get(entity)!;
  return (await s.app.sessions.issue(e, (await e.read(id))!)).token;
}

/** Creates a schema (201 expected). */
export async function schema(
  s: TestServer,
  admin: string,
  body: Record<string, unknown>,
): Promise<void> {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  status(r, 201, `create schema ${body.name}`);
}

/** Creates a record through the API (201 expected). */
export async function create(
  s: TestServer,
  token: string,
  entity: string,
  body: Record<string, unknown>,
): Promise<Rec> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, {
    token,
    body,
  });
  status(r, 201, `create ${entity} ${JSON.stringify(body)}`);
  return r.data as Rec;
}

/** Reads a record as the admin (undefined when it does not exist). */
export async function stored(
  s: TestServer,
  admin: string,
  entity: string,
  id: string,
): Promise<Rec | undefined> {
  const r = await s.request("GET", `/api/v1/entities/${entity}/${id}`, {
    token: admin,
  });
  if (r.status === 404) return undefined;
  status(r, 200, `admin get ${entity}/${id}`);
  return r.data as Rec;
}

/**
 * Walks every page of a list (following `cursor`) and checks the page
 * invariants. `partial`: pages may be short when a per-row rule hides more
 * rows than one page scans.
 */
export async function allPages<R extends { id: string } = Rec>(
  s: TestServer,
  token: string | undefined,
  entity: string,
  params: string,
  limit: number,
  partial = false,
): Promise<R[]> {
  const out: R[] = [];
  let after: string | null = null;
  for (let i = 0; i < 200; i++) {
    const q: string = `${params}&limit=${limit}` +
      (after ? `&after=${enc(after)}` : "");
    const r: Reply = await s.request(
      "GET",
      `/api/v1/entities/${entity}?${q}`,
      { token },
    );
    status(r, 200, `list ${entity}?${q}`);
    const page = r.data as Page<R>;
    eq(page.items_count, page.items.length, "items_count");
    eq(page.limit, limit, "limit echoed");
    if (page.has_more) {
      if (!partial) {
        eq(page.items.length, limit, `a page with has_more is full (${q})`);
      }
      if (!page.cursor) fail("has_more without cursor");
    } else eq(page.cursor, null, "last page has no cursor");
    out.push(...page.items);
    if (!page.has_more) return out;
    after = page.cursor;
  }
  return fail("more than 200 pages");
}

/** Every row of an entity as the admin sees it, in list order. */
export async function adminRows(
  s: TestServer,
  admin: string,
  entity: string,
): Promise<Rec[]> {
  return await allPages(s, admin, entity, "", 500);
}

/** Ids of rows inserted with SQL: they sort in `i` order, before any made now. */
export const SERIES_ID = padded("00000000-0000-7000-8000-", 12);

/** Three users of the auth entity `users` and their tokens. */
export interface Users {
  admin: string;
  alice: Rec;
  bob: Rec;
  carol: Rec;
  tAlice: string;
  tBob: string;
  tCarol: string;
}

/**
 * Creates the auth entity `users` (role, team, projects; get needs a login)
 * with alice and bob (writers) and carol (an editor, unverified), and issues
 * a token to each.
 */
export async function setupUsers(s: TestServer): Promise<Users> {
  const admin = await s.adminToken();
  await schema(s, admin, {
    name: "users",
    type: "auth",
    fields: [
      { name: "role", type: "string" },
      { name: "team", type: "string" },
      { name: "projects", type: "json" },
    ],
    rules: { get: { mode: "auth", expr: "" } },
  });
  const user = async (email: string, role: string) =>
    (await seedUser(s, "users", { email, role }, PASSWORD)) as unknown as Rec;
  const alice = await user("alice@example.com", "writer");
  const bob = await user("bob@example.com", "writer");
  const carol = await user("carol@example.com", "editor");
  return {
    admin,
    alice,
    bob,
    carol,
    tAlice: await tokenOf(s, "users", alice.id),
    tBob: await tokenOf(s, "users", bob.id),
    tCarol: await tokenOf(s, "users", carol.id),
  };
}

/** The ownership rule of `notes`. */
export const OWNER = "record.owner == auth.id";

/**
 * Creates `notes` (owner relation, title, n; every operation needs
 * `record.owner == auth.id`) with 40 rows: owners interleaved irregularly
 * (alice, bob, carol, and alice's in runs of different lengths), titles
 * `note 00`…`note 39`, `n` = (i·13) mod 17. Returns the rows as stored.
 */
export async function setupNotes(s: TestServer, u: Users): Promise<Rec[]> {
  await schema(s, u.admin, {
    name: "notes",
    type: "base",
    fields: [
      {
        name: "owner",
        type: "relation",
        foreign_key: { entity: "users", on_delete: "cascade" },
      },
      { name: "title", type: "string" },
      { name: "n", type: "int" },
    ],
    rules: {
      list: { mode: "custom", expr: OWNER },
      get: { mode: "custom", expr: OWNER },
      add: { mode: "custom", expr: `auth.id != "" && ${OWNER}` },
      update: { mode: "custom", expr: OWNER },
      delete: { mode: "custom", expr: OWNER },
    },
  });
  // Owner of row i: pattern[(7i + ⌊i/5⌋) mod 8].
  const pattern = [
    u.alice,
    u.bob,
    u.bob,
    u.alice,
    u.alice,
    u.alice,
    u.carol,
    u
      .bob,
  ];
  const owner = `CASE (i * 7 + i / 5) % 8 ${
    pattern.map((p, k) => `WHEN ${k} THEN '${p.id}'`).join(" ")
  } END`;
  await insertSeries(
    s,
    "notes",
    40,
    {
      id: SERIES_ID,
      owner,
      title: padded("note ", 2),
      n: "(i * 13) % 17",
    },
    [],
    0,
  );
  const notes = await adminRows(s, u.admin, "notes");
  for (const [i, x] of notes.entries()) {
    const want = pattern[(i * 7 + Math.floor(i / 5)) % pattern.length];
    eq(
      [x.owner, x.title, x.n],
      [want.id, `note ${String(i).padStart(2, "0")}`, (i * 13) % 17],
      `fixture row ${i}`,
    );
  }
  return notes;
}

/** A row of `items` (every scalar type, nulls and awkward strings). */
export interface Item {
  id: string;
  created: string;
  updated: string;
  title: string;
  n: number | null;
  price: number | null;
  active: boolean | null;
  due: string | null;
  note: string | null;
  owner: string | null;
}

/** The fields of `items` (and of the filter suites' ruled twins). */
export const ITEM_FIELDS = [
  { name: "title", type: "string" },
  { name: "n", type: "int" },
  { name: "price", type: "double" },
  { name: "active", type: "bool" },
  { name: "due", type: "date" },
  { name: "note", type: "text" },
  { name: "owner", type: "string" },
];

/** Titles with SQL (and LIKE) metacharacters, matched literally. */
export const NASTY = [
  "'; DROP TABLE items; --",
  '"; DROP TABLE items; --',
  "100% sure",
  "%",
  "a_b",
  "_",
  "axb",
  "back\\slash",
  "back\\\\double",
  "it's",
  "[abc]",
  "*star*",
];

/** Titles that JavaScript converts to numbers when compared with one. */
export const NUMERIC_TITLES = [
  "5",
  "05",
  " 5 ",
  "10",
  "1e1",
  "0x5",
  "true",
  "null",
];

/** The filter suites' world: two people, `items` and its rows. */
export interface ItemWorld {
  admin: string;
  alice: { id: string };
  bob: { id: string };
  tAlice: string;
  tBob: string;
  /** Every row of `items`, in list order. */
  all: Item[];
}

/**
 * Creates the auth entity `people` (alice, bob) and the public `items` with
 * 28 mixed rows (nulls, empty strings, dates, owners alice/bob/""/null), the
 * `NASTY` titles and the `NUMERIC_TITLES`.
 */
export async function setupItems(s: TestServer): Promise<ItemWorld> {
  const admin = await s.adminToken();
  await schema(s, admin, {
    name: "people",
    type: "auth",
    fields: [{ name: "nick", type: "string" }],
  });
  const person = async (email: string, nick: string) => ({
    id: (await seedUser(s, "people", { email, nick }, PASSWORD)).id,
  });
  const alice = await person("alice@example.com", "al");
  const bob = await person("bob@example.com", "bo");
  const pub = { mode: "public", expr: "" };
  await schema(s, admin, {
    name: "items",
    type: "base",
    fields: ITEM_FIELDS,
    rules: { list: pub, get: pub },
  });
  const WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"];
  const DATES = [
    "2024-01-15T10:00:00.000Z",
    "2024-06-01T00:00:00.000Z",
    "2024-06-30T23:59:59.999Z",
    "2025-02-28T12:30:00.000Z",
    null,
  ];
  const bodies: Record<string, unknown>[] = [];
  for (let i = 0; i < 28; i++) {
    bodies.push({
      title: `${WORDS[i % 7]} ${i}`,
      n: i % 5 === 4 ? null : (i * 3) % 11,
      price: i % 6 === 5 ? null : Math.round(((i * 7) % 13) * 25) / 10,
      active: i % 3 === 2 ? null : i % 2 === 0,
      due: DATES[i % 5],
      note: i % 4 === 0 ? null : i % 4 === 1 ? "" : `note ${i}`,
      owner: [alice.id, bob.id, "", null][i % 4],
    });
  }
  for (const title of NASTY) {
    bodies.push({ title, n: 100, owner: bob.id });
  }
  for (const title of NUMERIC_TITLES) {
    bodies.push({ title, n: 0, price: 0.5, note: title });
  }
  // PostgreSQL takes the creates concurrently (SQLite writes one at a time,
  // so there they go in turn): the expected results are computed from the
  // rows as listed, so the order the ids come out in does not matter.
  if (s.db === "postgres") {
    await Promise.all(bodies.map((body) => create(s, admin, "items", body)));
  } else {
    for (const body of bodies) await create(s, admin, "items", body);
  }
  const all = await allPages<Item>(s, admin, "items", "", 500);
  eq(all.length, bodies.length, "seeded rows");
  return {
    admin,
    alice,
    bob,
    tAlice: await tokenOf(s, "people", alice.id),
    tBob: await tokenOf(s, "people", bob.id),
    all,
  };
}

/** Lists `entity` with a filter (limit 500, count=true, extra parameters). */
export function listFiltered(
  s: TestServer,
  entity: string,
  filter: string,
  token?: string,
  extra = "",
): Promise<Reply> {
  return s.request(
    "GET",
    `/api/v1/entities/${entity}?limit=500&count=true&filter=${
      enc(filter)
    }${extra}`,
    { token },
  );
}

/** Which rows a filter must select, for a caller id ("" for a guest). */
export type Pred = (r: Item, authId: string) => boolean;

/** JavaScript `==` (the filter language's semantics), for the oracle. */
export function loose(a: unknown, b: unknown): boolean {
  // deno-lint-ignore eqeqeq
  return a == b;
}

/** JavaScript `<` on any two values, for the oracle. */
export function lt(a: unknown, b: unknown): boolean {
  return (a as number) < (b as number);
}

/** JavaScript `>=` on any two values, for the oracle. */
export function ge(a: unknown, b: unknown): boolean {
  return (a as number) >= (b as number);
}

/**
 * One step per filter: the list of `items` under the filter is exactly the
 * rows the JavaScript predicate keeps (same order, exact total), as alice,
 * and also as bob and as a guest when the filter reads `auth`. The steps
 * only read `w`.
 */
export async function checkFilters(
  t: Deno.TestContext,
  s: TestServer,
  w: ItemWorld,
  cases: readonly [string, Pred][],
): Promise<void> {
  for (const [filter, pred] of cases) {
    await t.step(filter, async () => {
      const callers = [
        ["alice", w.tAlice, w.alice.id],
        ["bob", w.tBob, w.bob.id],
        ["guest", undefined, ""],
      ] as const;
      for (const [who, token, authId] of callers) {
        if (who !== "alice" && !filter.includes("auth.")) continue;
        const r = await listFiltered(s, "items", filter, token);
        status(r, 200, `${filter} (${who})`);
        const p = r.data as Page<Item>;
        const expected = w.all.filter((x) => pred(x, authId));
        eq(p.items, expected, `${filter} (${who})`);
        eq(p.total, expected.length, `${filter} (${who}): total`);
      }
    });
  }
}
