/**
 * Slugs: every create and update of a post sets `slug` from `title`
 * ("Hello, World!" → "hello-world"), whatever the client sent as `slug`.
 *
 * Expects the entity `posts` with the fields `title` (string, required) and
 * `slug` (string). The slug is saved with the record, in the same write:
 * the hook runs inside the write's transaction, before the row is stored,
 * and the changed record is validated again.
 *
 * @module
 */

import type { RecordEvent, ScriptApp } from "../../mod.ts";

/** Lower-case ASCII letters and digits joined by single dashes. */
export function slugify(title: string): string {
  return title.normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
    .toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "")
    .slice(0, 80);
}

function setSlug(e: RecordEvent): void {
  // On update `e.record` is the new version: the stored title when the
  // request did not change it, so the slug always follows the title.
  if (typeof e.record.title === "string") {
    e.record.slug = slugify(e.record.title);
  }
}

export default function (app: ScriptApp): void {
  app.onRecord("beforeCreate", "posts", setSlug);
  app.onRecord("beforeUpdate", "posts", setSlug);
}
