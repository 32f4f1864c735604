/**
 * Files: a request that fails leaves no file behind and changes no record,
 * whatever the reason (validation, unknown field, too many files, unique
 * conflict, a rule, a missing id, the size cap, a truncated body) and
 * wherever the file part sits in the body.
 *
 * @module
 */

import {
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
} from "./_server.ts";
import {
  bytesOf,
  CAP,
  CONFIG,
  count,
  createEntities,
  createWith,
  filesSnapshot,
  listOf,
  MISSING_ID,
  multipart,
  type Part,
  record,
  sendForm,
  toReply,
  userOf,
} from "./_files_fixtures.ts";

/** An upload that must not stay. */
const up = (field = "cover", n = "orphan.txt"): Part => ({
  name: field,
  filename: n,
  data: "should not stay",
});

/** Who sends a row's request. */
type Who = "admin" | "u1" | "u2" | "guest";
/** Ids a row's path refers to. */
type Ids = { priv: string; target: string };

/** One failing write: method, path, parts, sender and status. */
interface Failing {
  name: string;
  method: "POST" | "PATCH";
  path: (ids: Ids) => string;
  parts: (ids: { u2: string }) => Part[];
  who: Who;
  status: number;
  /** Send the body cut short by 20 bytes. */
  truncate?: boolean;
}

const POST_PUB = () => "/api/v1/entities/pub";
const POST_PRIV = () => "/api/v1/entities/priv";
const PATCH_TARGET = (ids: Ids) => `/api/v1/entities/pub/${ids.target}`;
const PATCH_PRIV = (ids: Ids) => `/api/v1/entities/priv/${ids.priv}`;

const CASES: Failing[] = [
  {
    name: "validation error in another field",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), up("att"), { name: "n", value: "abc" }],
    who: "admin",
    status: 400,
  },
  {
    name: "validation error after the file",
    method: "POST",
    path: POST_PUB,
    parts: () => [
      up("att"),
      up("att", "two.txt"),
      { name: "b", value: "maybe" },
    ],
    who: "admin",
    status: 400,
  },
  {
    name: "unknown field",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), { name: "nope", value: "1" }],
    who: "admin",
    status: 400,
  },
  {
    name: "a file part to a non-file field",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), up("title")],
    who: "admin",
    status: 400,
  },
  {
    name: "two files for a single file field",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), up("cover", "second.txt")],
    who: "admin",
    status: 400,
  },
  {
    name: "more files than the field's max",
    method: "POST",
    path: POST_PUB,
    parts: () => [up("lim", "1.txt"), up("lim", "2.txt"), up("lim", "3.txt")],
    who: "admin",
    status: 400,
  },
  {
    name: "unique conflict",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), up("att"), { name: "slug", value: "taken" }],
    who: "admin",
    status: 409,
  },
  {
    name: "guest on an admin-only add",
    method: "POST",
    path: POST_PUB,
    parts: () => [up()],
    who: "guest",
    status: 401,
  },
  {
    name: "user on an admin-only add",
    method: "POST",
    path: POST_PUB,
    parts: () => [up()],
    who: "u1",
    status: 403,
  },
  {
    name: "custom add rule denies",
    method: "POST",
    path: POST_PRIV,
    parts: ({ u2 }) => [{ name: "owner", value: u2 }, up("doc")],
    who: "u1",
    status: 403,
  },
  {
    name: "custom add rule denies (file first)",
    method: "POST",
    path: POST_PRIV,
    parts: ({ u2 }) => [up("doc"), { name: "owner", value: u2 }],
    who: "u1",
    status: 403,
  },
  {
    name: "custom update rule denies",
    method: "PATCH",
    path: PATCH_PRIV,
    parts: () => [up("doc")],
    who: "u2",
    status: 404,
  },
  {
    // The rule reads record.*: a record-dependent denial → 404.
    name: "guest PATCH on an ownership rule",
    method: "PATCH",
    path: PATCH_PRIV,
    parts: () => [up("doc")],
    who: "guest",
    status: 404,
  },
  {
    name: "PATCH of a missing id",
    method: "PATCH",
    path: () => `/api/v1/entities/pub/${MISSING_ID}`,
    parts: () => [up(), up("att")],
    who: "admin",
    status: 404,
  },
  {
    name: "PATCH with a validation error",
    method: "PATCH",
    path: PATCH_TARGET,
    parts: () => [up(), { name: "n", value: "x1" }],
    who: "admin",
    status: 400,
  },
  {
    name: "PATCH unique conflict",
    method: "PATCH",
    path: PATCH_TARGET,
    parts: () => [up("att"), { name: "slug", value: "taken" }],
    who: "admin",
    status: 409,
  },
  {
    name: "oversize after a small file",
    method: "POST",
    path: POST_PUB,
    parts: () => [up(), {
      name: "att",
      filename: "big.bin",
      data: bytesOf(CAP + 100),
    }],
    who: "admin",
    status: 413,
  },
  {
    name: "oversize PATCH after a small file",
    method: "PATCH",
    path: PATCH_TARGET,
    parts: () => [up("att"), {
      name: "att",
      filename: "big.bin",
      data: bytesOf(CAP),
    }],
    who: "admin",
    status: 413,
  },
  {
    name: "malformed multipart (truncated)",
    method: "POST",
    path: POST_PUB,
    parts: () => [up()],
    who: "admin",
    status: 400,
    truncate: true,
  },
];

// The rows share the fixture records, which every row checks are unchanged;
// each row compares the disk and the counts before and after its request.
forEachDb(
  "files: a failing request leaves no new file behind",
  async (t, db) => {
    const s = await startServer(db, CONFIG);
    try {
      await createEntities(s, "users", "pub", "priv");
      const admin = await s.adminToken();
      const u1 = await userOf(s, "u1@files.test");
      const u2 = await userOf(s, "u2x@files.test");
      const tokens: Record<Who, string | undefined> = {
        admin,
        u1: u1.token,
        u2: u2.token,
        guest: undefined,
      };
      await createWith(s, "pub", [{ name: "slug", value: "taken" }]);
      const privRec = await sendForm(s, "POST", "/api/v1/entities/priv", [
        { name: "owner", value: u1.id },
      ], { token: u1.token });
      assertStatus(privRec, 201, "u1 priv record");
      const target = await createWith(s, "pub", [
        { name: "title", value: "target" },
        { name: "n", value: "1" },
      ]);
      const ids: Ids = { priv: privRec.data.id, target: target.id };
      const counts =
        async () => [await count(s, "pub"), await count(s, "priv")];

      for (const c of CASES) {
        await t.step(`${c.status}: ${c.name}`, async () => {
          const n0 = await counts();
          const before = await filesSnapshot(s);
          const path = c.path(ids);
          const parts = c.parts({ u2: u2.id });
          const token = tokens[c.who];
          let r: Reply;
          if (c.truncate) {
            const m = multipart(parts);
            r = await toReply(
              await fetch(s.url + path, {
                method: c.method,
                body: m.body.slice(0, m.body.length - 20),
                headers: {
                  "content-type": m.type,
                  authorization: `Bearer ${token}`,
                },
              }),
            );
          } else {
            r = await sendForm(s, c.method, path, parts, { token });
          }
          assertStatus(r, c.status, c.name);
          assertEquals(
            await filesSnapshot(s),
            before,
            "no file added or removed",
          );
          assertEquals(await counts(), n0, "record counts unchanged");
          const t2 = await record(s, "pub", target.id);
          assertEquals(
            [t2.title, t2.n, t2.cover, listOf(t2.att), t2.slug ?? null],
            ["target", 1, null, [], null],
            "target unchanged",
          );
          assertEquals(
            (await record(s, "priv", privRec.data.id)).doc ?? null,
            null,
            "priv record unchanged",
          );
        });
      }
    } finally {
      await s.close();
    }
  },
);
