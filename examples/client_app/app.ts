/**
 * A small app on `@moonbase/client`, typed by `schema.ts`: a user signs
 * up and in, writes posts, lists them with their authors, and follows new
 * ones live. `deno task check` type-checks it; tests/client_package_test.ts
 * runs it against a server.
 *
 * ```sh
 * deno run --allow-net examples/client_app/app.ts http://localhost:7070
 * ```
 *
 * @module
 */

import { Moonbase, MoonbaseError } from "../../client/mod.ts";
import type { PostsRecord, Schema } from "./schema.ts";

/** What the app did, for its caller to show or check. */
export interface Tour {
  user: string;
  titles: string[];
  authorNames: (string | null)[];
  live: string[];
  refused: string;
}

/** Runs the tour against `url` as a new user `email`. */
export async function tour(url: string, email: string): Promise<Tour> {
  const mb = new Moonbase<Schema>(url);
  try {
    const users = mb.entity("users");
    await users.create({ email, password: "correct-horse-1", name: "Ada" });
    const { user } = await mb.auth("users").login(email, "correct-horse-1");

    const live: string[] = [];
    const posts = mb.entity("posts");
    const stop = await posts.subscribe("*", (e) => {
      if (e.action === "create") live.push(e.record.title);
    });

    await posts.create({ title: "Hello", status: "published" });
    const draft = await posts.create({ title: "Draft" });
    await posts.update(draft.id, { views: 3 });

    const page = await posts.list({
      sort: "created",
      expand: "author",
      filter: `author == "${user.id}"`,
    });
    const titles = page.items.map((p: PostsRecord) => p.title);
    const authorNames = page.items.map((p) => p.expand?.author?.name ?? null);

    let refused = "";
    try {
      await posts.create({ title: "" });
    } catch (err) {
      if (err instanceof MoonbaseError) refused = Object.keys(err.fields)[0];
    }

    const deadline = Date.now() + 10_000;
    while (live.length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    stop();
    return { user: user.email, titles, authorNames, live, refused };
  } finally {
    mb.close();
  }
}

if (import.meta.main) {
  const url = Deno.args[0] ?? "http://localhost:7070";
  console.log(await tour(url, `ada-${Date.now()}@example.com`));
}
