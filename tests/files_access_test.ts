/**
 * Files: who may read a file. The entity's `get` rule decides (owner-only,
 * admin-only, any signed-in user), by header or `?token=`; and the short-lived
 * file token, which opens files and nothing else, never reaching the logs.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  startServer,
} from "./_server.ts";
import {
  assertStored,
  CONFIG,
  createEntities,
  createWith,
  getFile,
  jwtPayload,
  PNG,
  record,
  sendForm,
  type User,
  userOf,
} from "./_files_fixtures.ts";
import { pause } from "./_wait.ts";

const q = (token: string) => `?token=${encodeURIComponent(token)}`;

// Every step below only reads: the users and files are made once per test.
forEachDb(
  "files: the entity's get rule decides who gets a file",
  async (t, db) => {
    const s = await startServer(db, CONFIG);
    try {
      await createEntities(s, "users", "pub", "priv", "staff", "members");
      const admin = await s.adminToken();
      const u1 = await userOf(s, "u1@files.test");
      const u2 = await userOf(s, "u2x@files.test");
      const r = await sendForm(s, "POST", "/api/v1/entities/priv", [
        { name: "owner", value: u1.id },
        { name: "doc", filename: "mine.txt", data: "u1 private" },
      ], { token: u1.token });
      assertStatus(r, 201, "u1 uploads");
      const name = r.data.doc;
      assertStored(name, "priv doc");
      const tampered = u1.token.slice(0, -3) +
        (u1.token.endsWith("AAA") ? "BBB" : "AAA");

      // Refused by the rule: 404; an invalid token: 401.
      const denied: [string, { token?: string; query?: string }, number][] = [
        ["guest", {}, 404],
        ["other user (header)", { token: u2.token }, 404],
        ["other user (?token=)", { query: u2.token }, 404],
        ["garbage token", { token: "garbage" }, 401],
        ["garbage ?token=", { query: "garbage" }, 401],
        ["tampered token", { token: tampered }, 401],
        ["tampered ?token=", { query: tampered }, 401],
      ];
      for (const prefix of ["/api/files", "/api/v1/files"]) {
        const path = `${prefix}/priv/${name}`;
        for (const [who, o, status] of denied) {
          await t.step(`${prefix}: ${who} → ${status}`, async () => {
            for (const method of ["GET", "HEAD"]) {
              const g = await getFile(s, path + (o.query ? q(o.query) : ""), {
                method,
                token: o.token,
              });
              assertEquals(g.status, status, `${method} ${path} as ${who}`);
              assert(!g.text.includes("u1 private"), `${who}: no content`);
            }
          });
        }
        await t.step(`${prefix}: the owner by header`, async () => {
          const g = await getFile(s, path, { token: u1.token });
          assertEquals(
            [g.status, g.text],
            [200, "u1 private"],
            `${path}: owner by header`,
          );
          assert(
            !(g.headers.get("cache-control") ?? "").includes("public"),
            `a protected file is not publicly cacheable: ${
              g.headers.get("cache-control")
            }`,
          );
        });
        await t.step(`${prefix}: the owner by ?token=`, async () => {
          const g = await getFile(s, path + q(u1.token));
          assertEquals(
            [g.status, g.text],
            [200, "u1 private"],
            `${path}: owner by ?token=`,
          );
        });
        await t.step(`${prefix}: an admin`, async () => {
          const g = await getFile(s, path, { token: admin });
          assertEquals(
            [g.status, g.text],
            [200, "u1 private"],
            `${path}: admin`,
          );
        });
      }

      await t.step("the owner's token on another entity's route", async () => {
        const g = await getFile(s, `/api/files/pub/${name}?token=${u1.token}`);
        assertEquals(g.status, 404, "another entity's route");
      });

      await t.step("an admin-only get rule", async () => {
        const up = await createWith(s, "staff", [
          { name: "doc", filename: "staff.txt", data: "staff only" },
        ]);
        const staff = `/api/files/staff/${up.doc}`;
        assertEquals((await getFile(s, staff)).status, 404, "staff: guest");
        assertEquals(
          (await getFile(s, staff, { token: u1.token })).status,
          404,
          "staff: user",
        );
        assertEquals(
          (await getFile(s, staff, { token: admin })).text,
          "staff only",
          "staff: admin",
        );
      });

      await t.step("the get rule `auth`", async () => {
        const up = await createWith(s, "members", [
          { name: "doc", filename: "m.txt", data: "members" },
        ]);
        const members = `/api/files/members/${up.doc}`;
        assertEquals((await getFile(s, members)).status, 404, "members: guest");
        assertEquals(
          (await getFile(s, members, { token: "garbage" })).status,
          401,
          "members: bad token (an invalid token is a 401)",
        );
        const m = await getFile(s, members, { token: u2.token });
        assertEquals([m.status, m.text], [200, "members"], "members: any user");
      });
    } finally {
      await s.close();
    }
  },
);

// The steps share the users and one protected file, which they only read;
// each mints the file tokens it uses.
forEachDb("files: file token, short-lived, file routes only", async (t, db) => {
  const s = await startServer(db, CONFIG);
  try {
    await createEntities(s, "users", "pub", "priv");
    const admin = await s.adminToken();
    const u1 = await userOf(s, "u1@files.test");
    const u2 = await userOf(s, "u2x@files.test");
    const mint = async (u: User | string, what = "file token") => {
      const r = await s.request("POST", "/api/v1/files/token", {
        token: typeof u === "string" ? u : u.token,
      });
      assertStatus(r, 200, what);
      return r.data.token as string;
    };
    const up = await sendForm(s, "POST", "/api/v1/entities/priv", [
      { name: "owner", value: u1.id },
      { name: "doc", filename: "img.png", data: PNG },
    ], { token: u1.token });
    assertStatus(up, 201, "u1 upload");
    const path = `/api/files/priv/${up.data.doc}`;

    const refused: [string, string | undefined, string][] = [
      ["guest gets no file token", undefined, ""],
      ["bad token gets no file token", "garbage", ""],
      ["?token= does not mint file tokens", undefined, q(u1.token)],
    ];
    for (const [label, token, query] of refused) {
      await t.step(label, async () => {
        const r = await s.request("POST", `/api/v1/files/token${query}`, {
          token,
        });
        assertStatus(r, 401, label);
      });
    }

    await t.step("a user's file token is a short-lived JWT", async () => {
      const ft = await mint(u1, "u1 file token");
      assert(
        typeof ft === "string" && ft.split(".").length === 3,
        `a JWT: ${ft}`,
      );
      const claims = jwtPayload(ft);
      const ttl = Number(claims.exp) - Number(claims.iat);
      assert(ttl > 0 && ttl <= 300, `short-lived (${ttl} s)`);
    });

    await t.step("it opens the owner's file, not another's", async () => {
      const ft = await mint(u1, "u1 file token");
      const ft2 = await mint(u2, "u2 file token");
      let g = await getFile(s, path + q(ft));
      assertEquals(g.status, 200, "the file token opens the owner's file");
      assertEquals(g.headers.get("content-type"), "image/png", "content type");
      g = await getFile(s, `/api/v1/files/priv/${up.data.doc}${q(ft)}`);
      assertEquals(g.status, 200, "also on /api/v1/files");
      g = await getFile(s, path + q(ft2));
      assertEquals(g.status, 404, "u2's file token does not open u1's file");
    });

    const api: [string, string, unknown][] = [
      ["GET", `/api/v1/entities/priv/${up.data.id}`, undefined],
      ["GET", "/api/v1/entities/priv", undefined],
      ["GET", "/api/v1/entities/pub", undefined],
      ["PATCH", `/api/v1/entities/priv/${up.data.id}`, { owner: u1.id }],
      ["DELETE", `/api/v1/entities/priv/${up.data.id}`, undefined],
      ["POST", "/api/v1/auth/users/refresh", undefined],
      ["POST", "/api/v1/files/token", undefined],
      ["GET", "/api/v1/schemas", undefined],
    ];
    for (const [method, p, body] of api) {
      await t.step(`rejected on the API: ${method} ${p}`, async () => {
        const ft = await mint(u1);
        const r = await s.request(method, p, { token: ft, body });
        assertStatus(r, 401, `file token on ${method} ${p}`);
        assertEquals(
          (await record(s, "priv", up.data.id)).doc,
          up.data.doc,
          "record still there",
        );
        const g = await getFile(s, path + q(ft));
        assertEquals(
          g.status,
          200,
          "the file token still works on files afterwards",
        );
      });
    }

    await t.step("?token= on the API does not authenticate", async () => {
      const r = await s.request(
        "GET",
        `/api/v1/entities/priv/${up.data.id}?token=${u1.token}`,
      );
      assert(r.status !== 200, `?token= on the API must not authenticate`);
    });

    await t.step("tokens in ?token= never reach the logs", async () => {
      const ft = await mint(u1), ft2 = await mint(u2);
      const tokens = [ft, ft2, u1.token, u2.token];
      for (const tok of tokens) await getFile(s, path + q(tok));
      await s.request("GET", `/api/v1/entities/priv/${up.data.id}${q(ft)}`);
      await s.request("POST", `/api/v1/files/token${q(u1.token)}`);
      // Entries are written in batches: wait until these requests are in.
      let text = "";
      for (let i = 0; i < 100; i++) {
        const r = await s.request("GET", "/api/v1/sys/logs?limit=1000", {
          token: admin,
        });
        assertStatus(r, 200, "logs");
        text = r.text;
        const ours = (r.data.items as { path: string }[]).filter((e) =>
          e.path === path
        );
        if (ours.length >= tokens.length) break;
        await pause(50);
      }
      assert(text.includes(path), "the file requests are in the logs");
      for (const tok of tokens) {
        assert(
          !text.includes(tok) && !text.includes(tok.split(".")[2]),
          "a token appears in the logs",
        );
      }
    });

    await t.step("an admin's file token", async () => {
      const ft = await mint(admin, "admin file token");
      const g = await getFile(s, path + q(ft));
      assertEquals(g.status, 200, "admin file token opens any protected file");
      const r = await s.request("GET", "/api/v1/schemas", { token: ft });
      assertStatus(r, 401, "admin file token on the admin API");
    });
  } finally {
    await s.close();
  }
});
