/**
 * A stats route: `GET /api/stats/posts` → `{total, published, drafts}`,
 * counted as the caller: with `{ as: await ctx.auth() }` the entity's list
 * rule applies, so a guest counts only published posts and a user also
 * their own drafts, exactly as `GET /api/v1/entities/posts` would show
 * them. A bad token is a 401, as on every route.
 *
 * Expects the entity `posts` with the string fields `status` ("draft" or
 * "published") and `author` (a user id), and a list rule that compiles to
 * SQL (counts under a rule checked row by row are limited), for instance
 * `status == "published" || author == auth.id`.
 *
 * @module
 */

import type { AuthValue, ScriptApp } from "../../mod.ts";

export default function (app: ScriptApp): void {
  app.route("GET", "/api/stats/posts", async (ctx) => {
    const posts = app.entities.get("posts");
    if (!posts) throw app.error(404, "Cannot count posts: no entity posts");
    const as: AuthValue = await ctx.auth();
    const count = async (filter?: string) => {
      const q = new URLSearchParams({ count: "true", limit: "1" });
      if (filter) q.set("filter", filter);
      return (await posts.list(q, { as })).total ?? 0;
    };
    return {
      total: await count(),
      published: await count('status == "published"'),
      drafts: await count('status == "draft"'),
    };
  });
}
