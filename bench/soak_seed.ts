/**
 * The soak's data (bench/soak.ts): a `users` auth entity with one user,
 * `items` (public, 2 000 records to start with) and `notes` (owner-only),
 * made through the library.
 *
 * @module
 */

import { createApp } from "../mod.ts";

const PUBLIC = { mode: "public", expr: "" };
const OWNER = { mode: "custom", expr: "record.owner == auth.id" };
/** The soak user's password. */
export const PASSWORD = "soak-password-1";

/** Creates the entities and a first batch of records through the library. */
export async function prepare(
  cfg: Record<string, string>,
): Promise<{ ids: string[]; email: string }> {
  const app = await createApp({ ...cfg, quiet: true });
  try {
    const users = await app.schemas.create({
      name: "users",
      type: "auth",
      fields: [],
      rules: { add: PUBLIC },
    });
    const items = await app.schemas.create({
      name: "items",
      type: "base",
      fields: [
        { name: "title", type: "string", required: true },
        { name: "n", type: "int", index: true },
        { name: "tag", type: "string", index: true },
        { name: "meta", type: "json" },
      ],
      rules: {
        list: PUBLIC,
        get: PUBLIC,
        add: PUBLIC,
        update: PUBLIC,
        delete: PUBLIC,
      },
    });
    await app.schemas.create({
      name: "notes",
      type: "base",
      fields: [
        { name: "owner", type: "relation", foreign_key: { entity: "users" } },
        { name: "body", type: "text" },
      ],
      rules: { list: OWNER, get: OWNER, add: { mode: "auth", expr: "" } },
    });
    const email = "soak@example.com";
    await users.create({ email, password: PASSWORD });
    const ids: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const rec = await items.create({
        title: `item ${i}`,
        n: i,
        tag: `t${i % 10}`,
      });
      ids.push(String(rec.id));
    }
    return { ids, email };
  } finally {
    await app.close();
  }
}
