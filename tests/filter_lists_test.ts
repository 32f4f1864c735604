/**
 * The `filter` list parameter with the rest of a list, on both databases:
 * exact pages with `sort`, `limit` and `after` (no row twice, none missing,
 * totals on a page), `fields` that leave out the filtered fields, an empty
 * filter, a filter of the maximum length; and a filter never reveals rows
 * the list rule hides, whether the rule compiles to SQL or is checked row by
 * row (lists, totals and pages show only the caller's matching rows, a guest
 * sees none, an unknown field is still reported).
 *
 * @module
 */

import { forEachDb, startServer } from "./_server.ts";
import { eq, fail, status } from "./_checks.ts";
import {
  allPages,
  create,
  enc,
  ids,
  type Item,
  ITEM_FIELDS,
  listFiltered,
  type Page,
  schema,
  setupItems,
} from "./_rules_fixtures.ts";

/** Ascending order with null first (the documented list order). */
function cmpNullsFirst(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

function cmpId(a: Item, b: Item): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

const num = (v: unknown) => v as number;

/** A filter, a sort, the order it means and the rows the filter keeps. */
const SORTED: {
  filter: string;
  sort: string;
  order: (a: Item, b: Item) => number;
  keep: (r: Item) => boolean;
}[] = [
  {
    filter: "n >= 2",
    sort: "-price",
    order: (a, b) => cmpNullsFirst(b.price, a.price) || cmpId(a, b),
    keep: (r) => num(r.n) >= 2,
  },
  {
    filter: 'title.includes("a") && active != null',
    sort: "n,-title",
    order: (a, b) =>
      cmpNullsFirst(a.n, b.n) || -cmpNullsFirst(a.title, b.title) ||
      cmpId(a, b),
    keep: (r) => r.title.includes("a") && r.active !== null,
  },
  {
    filter: 'note != "x"',
    sort: "-note,-due",
    order: (a, b) =>
      cmpNullsFirst(b.note, a.note) || cmpNullsFirst(b.due, a.due) ||
      cmpId(a, b),
    keep: (r) => r.note !== "x",
  },
  {
    filter: "title.length > 5",
    sort: "-due",
    order: (a, b) => cmpNullsFirst(b.due, a.due) || cmpId(a, b),
    keep: (r) => r.title.length > 5,
  },
  {
    filter: "title.length > 7",
    sort: "due",
    order: (a, b) => cmpNullsFirst(a.due, b.due) || cmpId(a, b),
    keep: (r) => r.title.length > 7,
  },
];

const RULES: [string, string][] = [
  ["vault", "record.owner == auth.id"],
  ["vault_js", "record.owner == auth.id && record.title.length > 0"],
];

// The steps only list `items`; the list-rule steps create and fill entities
// of their own: they share one server and one fixture.
forEachDb("filter: in lists", async (t, db) => {
  const s = await startServer(db);
  try {
    const { all, admin, alice, bob, tAlice, tBob } = await setupItems(s);

    for (const { filter, sort, order, keep } of SORTED) {
      await t.step(`${filter}, sort=${sort}: exact pages`, async () => {
        const expected = all.filter(keep).sort(order);
        for (const limit of [1, 3, 5]) {
          const got = await allPages<Item>(
            s,
            tBob,
            "items",
            `filter=${enc(filter)}&sort=${sort}`,
            limit,
          );
          if (new Set(ids(got)).size !== got.length) {
            fail(`${filter} sort=${sort} limit=${limit}: duplicates`);
          }
          eq(
            got.map((x) => x.title),
            expected.map((x) => x.title),
            `${filter} sort=${sort} limit=${limit}`,
          );
        }
        const one = await s.request(
          "GET",
          `/api/v1/entities/items?filter=${
            enc(filter)
          }&sort=${sort}&limit=2&count=true`,
        );
        status(one, 200, "first page");
        eq(one.data.total, expected.length, `${filter}: total on a page`);
        eq(one.data.items_count, Math.min(2, expected.length), "items_count");
      });
    }

    await t.step("filter on fields not in the fields parameter", async () => {
      const r = await s.request(
        "GET",
        `/api/v1/entities/items?fields=title&count=true&filter=${
          enc("n == 3 && price != null")
        }`,
      );
      status(r, 200, "fields + filter");
      eq(
        r.data.items,
        all.filter((x) => x.n === 3 && x.price !== null).map((x) => ({
          title: x.title,
        })),
        "only titles, of the filtered rows",
      );
    });

    await t.step("an empty filter is no filter", async () => {
      const r = await s.request(
        "GET",
        "/api/v1/entities/items?filter=&count=true",
      );
      status(r, 200, "empty filter");
      eq(r.data.total, all.length, "empty filter total");
    });

    await t.step("a 4096-character filter is accepted", async () => {
      const base = "n == 3";
      const ok = await listFiltered(
        s,
        "items",
        base + " ".repeat(4096 - base.length),
        tBob,
      );
      status(ok, 200, "4096-character filter");
      eq(
        (ok.data as Page<Item>).items.map((x) => x.title),
        all.filter((x) => x.n === 3).map((x) => x.title),
        "4096-character filter result",
      );
    });

    for (const [name, expr] of RULES) {
      await t.step(`list rule ${expr}`, async () => {
        const rule = { mode: "custom", expr };
        await schema(s, admin, {
          name,
          type: "base",
          fields: ITEM_FIELDS,
          rules: { list: rule, get: rule },
        });
        const rows: Item[] = [];
        for (let i = 0; i < 20; i++) {
          rows.push(
            await create(s, admin, name, {
              title: `v${i}`,
              n: i,
              owner: i % 3 === 0 ? alice.id : bob.id,
              active: i % 2 === 0,
            }) as unknown as Item,
          );
        }
        const mine = (pred: (r: Item) => boolean) =>
          rows.filter((x) => x.owner === alice.id && pred(x)).map((x) =>
            x.title
          );
        const checks: [string, (r: Item) => boolean][] = [
          [`owner == "${bob.id}"`, (x) => x.owner === bob.id],
          [`owner != "${alice.id}"`, (x) => x.owner !== alice.id],
          ["true", () => true],
          ["n >= 0", (x) => (x.n as number) >= 0],
          ["owner != auth.id", (x) => x.owner !== alice.id],
          ['title.startsWith("v")', (x) => x.title.startsWith("v")],
          ["title.length > 2", (x) => x.title.length > 2],
          ["active || !active", () => true],
          [`owner == "${bob.id}" || n >= 0`, () => true],
        ];
        for (const [filter, pred] of checks) {
          const l = await listFiltered(s, name, filter, tAlice);
          status(l, 200, `${name} ${filter}`);
          const page = l.data as Page<Item>;
          eq(page.items.map((x) => x.title), mine(pred), `${name} ${filter}`);
          eq(page.total, mine(pred).length, `${name} ${filter} total`);
          const paged = await allPages<Item>(
            s,
            tAlice,
            name,
            `filter=${enc(filter)}`,
            2,
          );
          eq(
            paged.map((x) => x.title),
            mine(pred),
            `${name} ${filter} paged`,
          );
        }
        // A guest sees no row whatever the filter.
        const g = await listFiltered(
          s,
          name,
          `owner == "${alice.id}" || owner != ""`,
        );
        status(g, 200, "guest vault");
        eq(
          [(g.data as Page).items, (g.data as Page).total],
          [[], 0],
          "guest vault",
        );
        // Unknown fields are still reported (before anything is listed).
        const u = await listFiltered(s, name, "secret_field == 1", tAlice);
        status(u, 400, "unknown field in vault");
      });
    }
  } finally {
    await s.close();
  }
});
