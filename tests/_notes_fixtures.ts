/**
 * The fixture of the NUL-character and rule-trial tests: `members` (auth,
 * open but for its update rule), `notes` (base, open, with a file and a
 * relation field), one note and one member with a token.
 *
 * @module
 */

import assert from "node:assert/strict";
import { seedUser, type TestServer } from "./_server.ts";

/** The member's password. */
export const PW = "member-password-1";
/** A rule of a mode (and an expression). */
export const rule = (
  mode: string,
  expr = "",
): { mode: string; expr: string } => ({ mode, expr });
/** Every operation public. */
export const OPEN = {
  list: rule("public"),
  get: rule("public"),
  add: rule("public"),
  update: rule("public"),
  delete: rule("public"),
};

/** Creates an entity (201 asserted). */
export async function post(
  s: TestServer,
  admin: string,
  body: unknown,
): Promise<{ id: string }> {
  const r = await s.request("POST", "/api/v1/schemas", { token: admin, body });
  assert.equal(r.status, 201, r.text);
  return r.data as { id: string };
}

/** What `notesFixture` made. */
export interface Fx {
  admin: string;
  user: string;
  member: Record<string, unknown> & { id: string };
  note: { id: string };
}

/** `members` (auth), `notes` (base, a file and a relation field), one note, one member. */
export async function notesFixture(s: TestServer): Promise<Fx> {
  const admin = await s.adminToken();
  await post(s, admin, {
    name: "members",
    type: "auth",
    fields: [{ name: "nick", type: "string" }],
    rules: { ...OPEN, update: rule("custom", "auth.id == record.id") },
  });
  await post(s, admin, {
    name: "notes",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "meta", type: "json" },
      { name: "doc", type: "file" },
      {
        name: "owner",
        type: "relation",
        foreign_key: { entity: "members", on_delete: "set null" },
      },
    ],
    rules: OPEN,
  });
  const m = await seedUser(s, "members", { email: "m@example.com" }, PW);
  const user =
    (await s.app.sessions.issue(s.app.schemas.get("members")!, m)).token;
  const note = await s.request("POST", "/api/v1/entities/notes", {
    body: { title: "n1" },
  });
  assert.equal(note.status, 201, note.text);
  return { admin, user, member: m, note: note.data as { id: string } };
}
