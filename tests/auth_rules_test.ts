/**
 * The `auth` value in custom rules (docs/reference/rule-language.md): `auth.type`,
 * `auth.id`, `auth.entity` and `auth.user.<field>` as each kind of caller
 * sees them, for every operation of a notes entity.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  type TestServer,
} from "./_server.ts";
import {
  claimsOf,
  createSchema,
  fastUser,
  issue,
  withAuthServer,
} from "./_auth_fixtures.ts";

/** A notes entity of its own, with its callers and (maybe) three notes. */
interface NotesWorld {
  /** `/api/v1/entities/<notes entity>` */
  base: string;
  editor: { id: string };
  reader: { id: string };
  member: { id: string };
  /** Tokens of the editor, the reader (both users) and the member. */
  et: string;
  rt: string;
  mt: string;
  /** POSTs a note owned by `owner` of entity `ent`. */
  add(token: string | undefined, owner: unknown, ent: string): Promise<Reply>;
}

/**
 * Creates `notes_<tag>` with a rule per operation on the `auth` value, an
 * editor and a reader of `users` and a member (team red) of `members`, each
 * with a token. Distinct tags give each case its own entity and callers.
 */
async function notesWorld(
  s: TestServer,
  admin: string,
  tag: string,
): Promise<NotesWorld> {
  const editor = await fastUser(s, "users", {
    email: `ed-${tag}@corp.io`,
    role: "editor",
  });
  const reader = await fastUser(s, "users", {
    email: `reader-${tag}@example.com`,
    role: "reader",
  });
  const member = await fastUser(s, "members", {
    email: `mem-${tag}@corp.io`,
    team: "red",
  });
  const name = `notes_${tag}`;
  await createSchema(s, admin, {
    name,
    type: "base",
    fields: [
      { name: "owner", type: "string" },
      { name: "owner_entity", type: "string" },
      { name: "body", type: "string" },
    ],
    rules: {
      list: {
        mode: "custom",
        expr: "auth.type == 'user' && auth.entity == 'users'",
      },
      get: {
        mode: "custom",
        expr: "record.owner == auth.id && record.owner_entity == auth.entity",
      },
      add: {
        mode: "custom",
        expr: "auth.user.role == 'editor' || auth.user.team == 'red'",
      },
      update: {
        mode: "custom",
        expr: "auth.type == 'user' && auth.user.email.endsWith('@corp.io')",
      },
      delete: {
        mode: "custom",
        expr: "auth.type == 'guest' && auth.id == ''",
      },
    },
  });
  const base = `/api/v1/entities/${name}`;
  return {
    base,
    editor,
    reader,
    member,
    et: await issue(s, "users", editor.id),
    rt: await issue(s, "users", reader.id),
    mt: await issue(s, "members", member.id),
    add: (token, owner, ent) =>
      s.request("POST", base, {
        token,
        body: { owner, owner_entity: ent, body: `by ${owner}` },
      }),
  };
}

/**
 * Adds the editor's, the member's and the admin's note, in that order,
 * with the admin's token (which passes every rule).
 */
async function seedNotes(
  w: NotesWorld,
  admin: string,
): Promise<{ editorNote: string; memberNote: string; adminNote: string }> {
  const ids: string[] = [];
  for (
    const [owner, ent] of [
      [w.editor.id, "users"],
      [w.member.id, "members"],
      [claimsOf(admin).sub, "mb_admins"],
    ]
  ) {
    const r = await w.add(admin, owner, ent);
    assertStatus(r, 201, `seed note of ${ent}`);
    ids.push(r.data.id);
  }
  return { editorNote: ids[0], memberNote: ids[1], adminNote: ids[2] };
}

forEachDb(
  "auth rules: the auth value in custom rules",
  (t, db) =>
    withAuthServer(db, async (s, admin) => {
      // Every step makes its own notes entity, callers and notes.
      await t.step("add: auth.user.<field> (role or team)", async () => {
        const w = await notesWorld(s, admin, "add");
        let r = await w.add(w.et, w.editor.id, "users");
        assertStatus(r, 201, "editor");
        r = await w.add(w.mt, w.member.id, "members");
        assertStatus(r, 201, "member of team red");
        r = await w.add(w.rt, w.reader.id, "users");
        assertStatus(r, 403, "reader");
        r = await w.add(undefined, "", "");
        assertStatus(r, 401, "guest");
        r = await w.add(admin, claimsOf(admin).sub, "mb_admins");
        assertStatus(r, 201, "admin passes every rule");
      });

      await t.step("list: auth.type and auth.entity", async () => {
        const w = await notesWorld(s, admin, "list");
        const n = await seedNotes(w, admin);
        let r = await s.request("GET", `${w.base}?sort=created`, {
          token: w.et,
        });
        assertStatus(r, 200, "users user");
        assertEquals(
          r.data.items.map((x: { id: string }) => x.id),
          [n.editorNote, n.memberNote, n.adminNote],
        );
        r = await s.request("GET", w.base, { token: w.rt });
        assertStatus(r, 200, "another users user");
        assertEquals(r.data.items.length, 3);
        r = await s.request("GET", w.base, { token: w.mt });
        assertStatus(r, 403, "user of another entity");
        r = await s.request("GET", w.base);
        assertStatus(r, 401, "guest");
        r = await s.request("GET", w.base, { token: admin });
        assertStatus(r, 200, "admin");
        assertEquals(r.data.items.length, 3);
      });

      await t.step(
        "get: auth.id and auth.entity against the record",
        async () => {
          const w = await notesWorld(s, admin, "get");
          const n = await seedNotes(w, admin);
          const get = (id: string, token?: string) =>
            s.request("GET", `${w.base}/${id}`, { token });
          let r = await get(n.editorNote, w.et);
          assertStatus(r, 200, "owner");
          assertEquals(r.data.owner, w.editor.id);
          r = await get(n.memberNote, w.mt);
          assertStatus(r, 200, "member owner");
          assertEquals(r.data.owner_entity, "members");
          r = await get(n.editorNote, w.rt);
          assertStatus(r, 404, "another user (record-dependent → 404)");
          r = await get(n.editorNote, w.mt);
          assertStatus(r, 404, "user of another entity");
          r = await get(n.editorNote);
          assert(
            r.status === 401 || r.status === 404,
            `guest: 401 or 404, got ${r.status}`,
          );
          r = await get(n.editorNote, admin);
          assertStatus(r, 200, "admin");
          // The admin's own note: owner_entity mb_admins; auth.entity matches.
          r = await get(n.adminNote, admin);
          assertStatus(r, 200);
        },
      );

      await t.step("update: auth.user.email", async () => {
        const w = await notesWorld(s, admin, "update");
        const { editorNote } = await seedNotes(w, admin);
        const patch = (body: string, token?: string) =>
          s.request("PATCH", `${w.base}/${editorNote}`, {
            token,
            body: { body },
          });
        let r = await patch("member edit", w.mt);
        assertStatus(r, 200, "member with @corp.io");
        assertEquals(r.data.body, "member edit");
        r = await patch("reader edit", w.rt);
        assertStatus(r, 403, "reader (@example.com)");
        r = await patch("guest edit");
        assertStatus(r, 401, "guest");
        r = await s.request("GET", `${w.base}/${editorNote}`, { token: admin });
        assertEquals(
          r.data.body,
          "member edit",
          "refused edits changed nothing",
        );
      });

      await t.step(
        "delete: auth.type == 'guest' lets only guests (and admins) in",
        async () => {
          const w = await notesWorld(s, admin, "delete");
          const n = await seedNotes(w, admin);
          let r = await s.request("DELETE", `${w.base}/${n.editorNote}`, {
            token: w.et,
          });
          assertStatus(r, 403, "user");
          r = await s.request("DELETE", `${w.base}/${n.editorNote}`);
          assertStatus(r, 204, "guest");
          r = await s.request("DELETE", `${w.base}/${n.memberNote}`, {
            token: admin,
          });
          assertStatus(r, 204, "admin");
          r = await s.request("GET", w.base, { token: admin });
          assertEquals(r.data.items.map((x: { id: string }) => x.id), [
            n.adminNote,
          ]);
        },
      );

      await t.step(
        "auth.user reflects the stored user (after a change)",
        async () => {
          const w = await notesWorld(s, admin, "change");
          let r = await w.add(w.rt, w.reader.id, "users");
          assertStatus(r, 403, "reader before the change");
          // The reader becomes an editor: the same token now passes `add`.
          r = await s.request(
            "PATCH",
            `/api/v1/entities/users/${w.reader.id}`,
            {
              token: admin,
              body: { role: "editor" },
            },
          );
          assertStatus(r, 200);
          r = await w.add(w.rt, w.reader.id, "users");
          assertStatus(r, 201, "reader promoted to editor");
          // A revoked token no longer counts as a user in rules.
          r = await s.request("POST", "/api/v1/auth/users/logout", {
            token: w.rt,
          });
          assertStatus(r, 200);
          r = await w.add(w.rt, w.reader.id, "users");
          assertStatus(r, 401, "logged-out token");
        },
      );
    }),
);
