/**
 * Fixtures of the aggregate suites: an `orders` entity whose list rule
 * shows each user their own orders, seeded with values at the edges (UTC
 * midnight, week and year boundaries, a time zone offset, nulls, negative
 * numbers), and a reference that computes an aggregate answer in
 * JavaScript from the records a caller lists — what the aggregate route
 * must answer for that caller.
 *
 * @module
 */

import type { TestServer } from "./_server.ts";
import { createEntity, createRecord, userToken } from "./_scenarios.ts";
import { columnOf, tableOf } from "../lib/schema/ddl.ts";
import { uuidv7 } from "../lib/ids.ts";
import type { SqlValue } from "../lib/db/storage.ts";

/** A record as the API returns it. */
export type Rec = Record<string, unknown> & { id: string };

/** What `setupOrders` made. */
export interface Orders {
  alice: { id: string; token: string };
  bob: { id: string; token: string };
}

const OWN = { mode: "custom", expr: "record.owner == auth.id" };
const ADMIN = { mode: "", expr: "" };

/** One seeded order: owner (a, b or none), status, paid, qty, price, placed. */
type Row = [
  "a" | "b" | null,
  string | null,
  boolean | null,
  number | null,
  number | null,
  string | null,
];

/** The orders, with their `placed` dates at the edges worth testing. */
export const ORDER_ROWS: readonly Row[] = [
  ["a", "open", false, 2, 0.1, "2026-11-29T23:59:59.999Z"], // a Sunday's last ms
  ["a", "open", true, 3, 0.2, "2026-11-30T00:00:00.000Z"], // the Monday after
  ["a", "paid", true, 5, 999.5, "2026-12-31T23:59:59.999Z"],
  ["a", "paid", null, -7, null, "2027-01-01T00:00:00.000Z"],
  ["a", "void", false, null, 0.3, null],
  ["b", "open", true, 10, 1.25, "2026-11-30T01:00:00+02:00"], // Sunday in UTC
  ["b", "paid", false, 1, 2.5, "2021-01-03T10:00:00Z"], // ISO week 2020-W53
  ["b", null, true, 4, 3.75, "1969-12-31T23:59:59.999Z"],
  [null, "paid", true, 100, 50, "0000-01-01T00:00:00Z"],
  [null, "open", false, 1, 1, "9999-12-31T23:59:59.999Z"],
];

/**
 * Creates `users` (alice, bob) and `orders` (list and get: the owner only;
 * writes: admins), seeded with {@link ORDER_ROWS}.
 */
export async function setupOrders(s: TestServer): Promise<Orders> {
  const alice = await userToken(s, "alice@example.com");
  const bob = await userToken(s, "bob@example.com");
  await createEntity(s, {
    name: "orders",
    fields: [
      { name: "status", type: "select", values: ["open", "paid", "void"] },
      { name: "paid", type: "bool" },
      { name: "qty", type: "int" },
      { name: "price", type: "double" },
      {
        name: "owner",
        type: "relation",
        foreign_key: { entity: "users", on_delete: "set null" },
      },
      { name: "placed", type: "date" },
      { name: "note", type: "string" },
      { name: "body", type: "text" },
      { name: "meta", type: "json" },
    ],
    rules: { list: OWN, get: OWN, add: ADMIN, update: ADMIN, delete: ADMIN },
  });
  for (const [o, status, paid, qty, price, placed] of ORDER_ROWS) {
    await createRecord(s, "orders", {
      owner: o === "a" ? alice.id : o === "b" ? bob.id : null,
      status,
      paid,
      qty,
      price,
      placed,
      note: status ? `${status} order` : null,
    });
  }
  return { alice, bob };
}

/** Inserts a row with the `created` (and `updated`) the test chooses. */
export async function insertAt(
  s: TestServer,
  entity: string,
  created: string,
  values: Record<string, SqlValue> = {},
): Promise<void> {
  const row: Record<string, SqlValue> = {
    id: uuidv7(),
    created,
    updated: created,
    ...values,
  };
  const cols = Object.keys(row);
  await s.app.storage.run(
    `INSERT INTO ${tableOf(entity)} (${
      cols.map(columnOf).join(", ")
    }) VALUES (${cols.map(() => "?").join(", ")})`,
    Object.values(row),
  );
}

/** Every record `token` lists (pages of 500 followed to the end). */
export async function listAll(
  s: TestServer,
  entity: string,
  token: string | undefined,
  filter?: string,
): Promise<Rec[]> {
  const out: Rec[] = [];
  let after = "";
  do {
    const q = new URLSearchParams({ limit: "500" });
    if (filter) q.set("filter", filter);
    if (after) q.set("after", after);
    const r = await s.request("GET", `/api/v1/entities/${entity}?${q}`, {
      token,
    });
    if (r.status !== 200) throw new Error(`list: ${r.text}`);
    out.push(...r.data.items);
    after = r.data.cursor ?? "";
  } while (after);
  return out;
}

/** What a reference aggregate asks. */
export interface Ask {
  group?: string[];
  count?: boolean;
  sum?: string[];
  avg?: string[];
  min?: string[];
  max?: string[];
}

/** The query string of an `Ask` (plus `extra` parameters). */
export function askQuery(a: Ask, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  if (a.group?.length) q.set("group", a.group.join(","));
  if (a.count) q.set("count", "true");
  for (const k of ["sum", "avg", "min", "max"] as const) {
    if (a[k]?.length) q.set(k, a[k]!.join(","));
  }
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q.toString();
}

const DAY = 86_400_000;

/** The date of `ms` as YYYY-MM-DD, years before 0 as -YYYY (from toISOString). */
function dateOf(ms: number): string {
  const iso = new Date(ms).toISOString();
  // Years outside 0..9999 come as ±YYYYYY.
  return iso.startsWith("-") || iso.startsWith("+")
    ? iso[0] === "-" ? "-" + iso.slice(3, 13) : iso.slice(3, 13)
    : iso.slice(0, 10);
}

/** A record value's key for a group term, computed with `Date`. */
export function termKey(rec: Rec, term: string): unknown {
  const [field, bucket] = term.split(":");
  const v = rec[field];
  if (v === null || v === undefined) return null;
  if (!bucket) return v;
  const t = Date.parse(String(v));
  if (bucket === "day") return dateOf(t);
  if (bucket === "month") return dateOf(t).slice(0, -3);
  if (bucket === "year") return dateOf(t).slice(0, -6);
  const midnight = Math.floor(t / DAY) * DAY;
  const back = (new Date(midnight).getUTCDay() + 6) % 7; // days since Monday
  return dateOf(midnight - back * DAY);
}

const round = (n: number) => Number(n.toPrecision(12));

/** Key order of the contract: null, false, true, numbers, text by code units. */
function compare(a: unknown, b: unknown): number {
  const rank = (v: unknown) =>
    v === null ? 0 : typeof v === "boolean" ? 1 : typeof v === "number" ? 2 : 3;
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === "boolean" || typeof a === "number") {
    return Number(a) - Number(b);
  }
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

/** The answer to `a` over `records`, computed here. */
export function reference(records: Rec[], a: Ask): unknown {
  const terms = a.group ?? [];
  const groups = new Map<string, Rec[]>();
  for (const r of records) {
    const k = JSON.stringify(terms.map((t) => termKey(r, t)));
    groups.set(k, [...groups.get(k) ?? [], r]);
  }
  if (terms.length === 0 && groups.size === 0) groups.set("[]", []);
  const values = (rs: Rec[], f: string) =>
    rs.map((r) => r[f]).filter((v) => v !== null && v !== undefined);
  const out = [...groups].map(([k, rs]) => {
    const key = JSON.parse(k) as unknown[];
    const g: Record<string, unknown> = {
      key: Object.fromEntries(terms.map((t, i) => [t, key[i]])),
    };
    if (a.count) g.count = rs.length;
    const total = (f: string) =>
      (values(rs, f) as number[]).reduce((x, y) => x + y, 0);
    if (a.sum?.length) {
      g.sum = Object.fromEntries(a.sum.map((f) => [f, round(total(f))]));
    }
    if (a.avg?.length) {
      g.avg = Object.fromEntries(a.avg.map((f) => {
        const n = values(rs, f).length;
        return [f, n === 0 ? null : round(total(f) / n)];
      }));
    }
    for (const fn of ["min", "max"] as const) {
      if (!a[fn]?.length) continue;
      g[fn] = Object.fromEntries(a[fn]!.map((f) => {
        const vs = values(rs, f).sort(compare);
        return [f, vs.length ? vs[fn === "min" ? 0 : vs.length - 1] : null];
      }));
    }
    return { g, key };
  });
  out.sort((x, y) => {
    for (let i = 0; i < terms.length; i++) {
      const c = compare(x.key[i], y.key[i]);
      if (c !== 0) return c;
    }
    return 0;
  });
  return { groups: out.map((o) => o.g) };
}
