/**
 * Seeds a benchmark database through the library: a `users` auth entity,
 * `items` (public, 10 000 records), `notes` (owner-only custom rule),
 * `orders` (public, as many records as `items`, inserted in one statement:
 * a `status` select and a `total` double, for the aggregate scenario),
 * `rt_pings` (public, empty: the realtime benchmark's writes), `authors`
 * (public, 50) and `posts` (public, 1000 in one statement, 20 per author:
 * the expand scenarios), `photos` (public, a file field with a thumbnail
 * size; the benchmark uploads its image) and, with `search`, `articles`
 * (100 000 searchable records, bench/search_seed.ts).
 *
 * @module
 */

import { createApp } from "../mod.ts";
import { internalApp } from "../lib/internal_app.ts";
import type { AppConfig } from "../lib/config.ts";
import type { Storage } from "../lib/db/storage.ts";
import { seedArticles } from "./search_seed.ts";

/** What the scenarios need to know about the seeded data. */
export interface Seeded {
  itemId: string;
  noteId: string;
  email: string;
  password: string;
}

const PUBLIC = { mode: "public", expr: "" };

/** The realtime benchmark's entity: `seq` (int) and `sent` (ms, double). */
export const PINGS = "rt_pings";

/** The entity of the file scenarios, and its thumbnail size. */
export const PHOTOS = "photos";
export const THUMB = "100x100";

/** Authors, each with `POSTS_EACH` posts. */
const AUTHORS = 50, POSTS_EACH = 20;

/** Creates the entities and records. */
export async function seed(
  config: AppConfig,
  count = 10_000,
  search = false,
): Promise<Seeded> {
  const app = await createApp({ ...config, quiet: true });
  try {
    const users = await app.schemas.create({
      name: "users",
      type: "auth",
      fields: [],
      rules: { add: PUBLIC },
    });
    await app.schemas.create({
      name: "items",
      type: "base",
      fields: [
        { name: "title", type: "string", required: true },
        { name: "n", type: "int", index: true },
        { name: "tag", type: "string" },
      ],
      // Filter + sort (`tag == "t3" && n in a range`, `sort=-n`): one index
      // serves the equality, both bounds and the order; it serves `tag`
      // alone too.
      indexes: [{ fields: ["tag", "n"], unique: false }],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC, update: PUBLIC },
    });
    const notes = await app.schemas.create({
      name: "notes",
      type: "base",
      fields: [{
        name: "owner",
        type: "relation",
        foreign_key: { entity: "users" },
      }, {
        name: "body",
        type: "text",
      }],
      rules: {
        list: { mode: "custom", expr: "record.owner == auth.id" },
        get: { mode: "custom", expr: "record.owner == auth.id" },
      },
    });
    await app.schemas.create({
      name: PINGS,
      type: "base",
      fields: [
        { name: "seq", type: "int" },
        { name: "sent", type: "double" },
      ],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC },
    });
    await app.schemas.create({
      name: "orders",
      type: "base",
      fields: [
        {
          name: "status",
          type: "select",
          values: ["open", "paid", "shipped", "void"],
        },
        { name: "total", type: "double" },
      ],
      rules: { list: PUBLIC, get: PUBLIC },
    });
    await seedOrders(internalApp(app).storage, count);
    // Login with a TOTP second factor (bench/totp.ts makes its users).
    await app.schemas.create({
      name: "mfa_users",
      type: "auth",
      fields: [],
      rules: { add: PUBLIC },
      auth: { totp: { enabled: true } },
    });
    await app.schemas.create({
      name: "authors",
      type: "base",
      fields: [{ name: "name", type: "string" }],
      rules: { list: PUBLIC, get: PUBLIC },
    });
    await app.schemas.create({
      name: "posts",
      type: "base",
      fields: [
        { name: "title", type: "string" },
        {
          name: "author",
          type: "relation",
          foreign_key: { entity: "authors" },
        },
      ],
      rules: { list: PUBLIC, get: PUBLIC },
    });
    await app.schemas.create({
      name: PHOTOS,
      type: "base",
      fields: [{ name: "img", type: "file", thumbs: [THUMB] }],
      rules: { list: PUBLIC, get: PUBLIC, add: PUBLIC },
    });
    const authors = app.schemas.get("authors")!;
    const authorIds: string[] = [];
    for (let i = 0; i < AUTHORS; i++) {
      authorIds.push(String((await authors.create({ name: `a${i}` })).id));
    }
    await seedPosts(internalApp(app).storage, authorIds);
    const email = "bench@example.com", password = "bench-password-1";
    const user = await users.create({ email, password });
    const items = app.schemas.get("items")!;
    let itemId = "";
    for (let i = 0; i < count; i++) {
      const rec = await items.create({
        title: `item ${i}`,
        n: i,
        tag: `t${i % 10}`,
      });
      if (i === Math.floor(count / 2)) itemId = String(rec.id);
    }
    const note = await notes.create({ owner: user.id, body: "mine" });
    if (search) await seedArticles(internalApp(app));
    return { itemId, noteId: String(note.id), email, password };
  } finally {
    await app.close();
  }
}

/**
 * `POSTS_EACH` posts per author in one statement, created one second apart
 * (author `i % authors`).
 */
async function seedPosts(store: Storage, authors: string[]): Promise<void> {
  const pg = store.dialect.name === "postgres";
  const n = authors.length * POSTS_EACH;
  const at = pg
    ? `to_char(timestamp '2026-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', i || ' seconds')`;
  const pick = authors.map((id, k) => `WHEN ${k} THEN '${id}'`).join(" ");
  const cols =
    `"id", "created", "updated", "title", "author") SELECT 'p' || i, ${at}, ${at}, 'post ' || i, CASE i % ${authors.length} ${pick} END`;
  await store.run(
    pg
      ? `INSERT INTO "posts" (${cols} FROM generate_series(1, ${n}) AS g(i)`
      : `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${n}) INSERT INTO "posts" (${cols} FROM c`,
  );
}

/**
 * `count` orders in one statement: status by `i % 4` (the first value a
 * quarter of the time, and so on), total `(i % 1000) / 4`, created one
 * minute apart from 2026-01-01.
 */
async function seedOrders(store: Storage, count: number): Promise<void> {
  const pg = store.dialect.name === "postgres";
  const status =
    `CASE i % 4 WHEN 0 THEN 'open' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped' ELSE 'void' END`;
  const at = pg
    ? `to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', i || ' minutes')`;
  const cols =
    `"id", "created", "updated", "status", "total") SELECT 'o' || i, ${at}, ${at}, ${status}, (i % 1000) / 4.0`;
  await store.run(
    pg
      ? `INSERT INTO "orders" (${cols} FROM generate_series(1, ${count}) AS g(i)`
      : `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${count}) INSERT INTO "orders" (${cols} FROM c`,
  );
}
