/**
 * Seeds a benchmark database through the library: a `users` auth entity,
 * `items` (public, 10 000 records), `notes` (owner-only custom rule),
 * `orders` (public, as many records as `items`, inserted in one statement:
 * a `status` select and a `total` double, for the aggregate scenario) and
 * `rt_pings` (public, empty: the realtime benchmark's writes).
 *
 * @module
 */

import { createApp } from "../mod.ts";
import { internalApp } from "../lib/internal_app.ts";
import type { AppConfig } from "../lib/config.ts";
import type { Storage } from "../lib/db/storage.ts";

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

/** Creates the entities and records. */
export async function seed(config: AppConfig, count = 10_000): Promise<Seeded> {
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
    return { itemId, noteId: String(note.id), email, password };
  } finally {
    await app.close();
  }
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
