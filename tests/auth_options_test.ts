/**
 * An auth entity's `auth` object in its schema (docs/guide/settings-and-mail.md):
 * defaults, partial changes, unknown keys and bad values (400 with
 * `data.fields`), only on auth entities, write-only provider secrets,
 * `oauth2.fields` following field renames; and `GET /api/v1/auth/<entity>/methods`
 * with the `404 Route Not Found` rule. One server per database; each step
 * creates the entities it uses.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  assertStatus,
  forEachDb,
  type Reply,
  startServer,
  type TestServer,
} from "./_server.ts";
import { authOptions } from "../lib/schema/auth_options.ts";

const ROUTE_NOT_FOUND = '{"status":404,"data":null,"error":"Route Not Found"}';

const DEFAULT_AUTH = {
  password: { enabled: true },
  require_verified: false,
  otp: { enabled: false, duration: 180, length: 6 },
  mfa: { enabled: false, duration: 300 },
  totp: { enabled: false },
  oauth2: {
    enabled: false,
    providers: [],
    fields: { name: null, avatar: null },
  },
};

const GOOGLE = {
  name: "google",
  display_name: "Google",
  preset: "google",
  client_id: "client-1",
  client_secret: "google-secret-1",
  scopes: ["openid", "email"],
};

async function create(
  s: TestServer,
  body: Record<string, unknown>,
): Promise<Reply> {
  return await s.request("POST", "/api/v1/schemas", {
    token: await s.adminToken(),
    body: { fields: [], ...body },
  });
}

async function patch(
  s: TestServer,
  name: string,
  body: Record<string, unknown>,
): Promise<Reply> {
  return await s.request("PATCH", `/api/v1/schemas/${name}`, {
    token: await s.adminToken(),
    body,
  });
}

forEachDb("auth options in the schema", async (t, db) => {
  const s = await startServer(db);
  try {
    const admin = await s.adminToken();

    await t.step("a new auth entity gets the defaults", async () => {
      const r = await create(s, { name: "u_defaults", type: "auth" });
      assertStatus(r, 201);
      const { templates, ...rest } = r.data.auth as Record<string, unknown>;
      assertEquals(rest, DEFAULT_AUTH);
      assertEquals(
        Object.keys(templates as object).sort(),
        ["email_change", "otp", "password_reset", "verification"],
      );
      const v = (templates as Record<string, Record<string, string>>)
        .verification;
      assertEquals(
        v.action_url,
        "{APP_URL}/mb/auth/{ENTITY}/confirm-verification?token={TOKEN}",
      );
      assert(v.body.includes("{ACTION_URL}") && v.subject !== "");
      const g = await s.request("GET", "/api/v1/schemas/u_defaults", {
        token: admin,
      });
      assertEquals(g.data.auth, r.data.auth);
    });

    await t.step("only auth entities have auth", async () => {
      for (const type of ["base", "view"]) {
        const r = await create(s, {
          name: `x_${type}`,
          type,
          auth: {},
          ...(type === "view" ? { view_query: "SELECT 1 AS id" } : {}),
        });
        assertStatus(r, 400, type);
      }
      assertStatus(await create(s, { name: "b1", type: "base" }), 201);
      const g = await s.request("GET", "/api/v1/schemas/b1", { token: admin });
      assertEquals("auth" in g.data, false);
      assertStatus(await patch(s, "b1", { auth: {} }), 400);
      const all = await s.request("GET", "/api/v1/schemas", { token: admin });
      const admins = all.data.find((e: { name: string }) =>
        e.name === "mb_admins"
      );
      assertEquals("auth" in admins, false);
    });

    await t.step(
      "unknown keys and bad values: 400 with data.fields",
      async () => {
        assertStatus(await create(s, { name: "u_bad", type: "auth" }), 201);
        const cases: [unknown, string[]][] = [
          [{ otp: { lenght: 8 } }, ["auth.otp.lenght"]],
          [{ foo: 1 }, ["auth.foo"]],
          [{ templates: { welcome: {} } }, ["auth.templates.welcome"]],
          [{ templates: { otp: { subject: "x", sender: "y" } } }, [
            "auth.templates.otp.sender",
          ]],
          [{ otp: { length: "6" } }, ["auth.otp.length"]],
          [{ otp: { duration: 0 } }, ["auth.otp.duration"]],
          [{ mfa: { duration: 1.5 } }, ["auth.mfa.duration"]],
          [{ password: { enabled: "yes" } }, ["auth.password.enabled"]],
          [{ require_verified: 1 }, ["auth.require_verified"]],
          [{ templates: { verification: { subject: "" } } }, [
            "auth.templates.verification.subject",
          ]],
          [{ oauth2: { providers: {} } }, ["auth.oauth2.providers"]],
          [{ oauth2: { providers: [{ ...GOOGLE, secret: "x" }] } }, [
            "auth.oauth2.providers.0.secret",
          ]],
          [
            {
              oauth2: { providers: [{ ...GOOGLE, issuer: "https://a.test" }] },
            },
            [
              "auth.oauth2.providers.0.issuer",
            ],
          ],
          [{ oauth2: { providers: [{ ...GOOGLE, preset: "" }] } }, [
            "auth.oauth2.providers.0.issuer",
          ]],
          [{ oauth2: { providers: [{ ...GOOGLE, preset: "myspace" }] } }, [
            "auth.oauth2.providers.0.preset",
          ]],
          [{
            oauth2: {
              providers: [{
                ...GOOGLE,
                preset: "",
                issuer: "http://idp.example.com",
              }],
            },
          }, ["auth.oauth2.providers.0.issuer"]],
          [{ oauth2: { providers: [GOOGLE, GOOGLE] } }, [
            "auth.oauth2.providers.1.name",
          ]],
          [{ oauth2: { providers: [{ ...GOOGLE, name: "Google!" }] } }, [
            "auth.oauth2.providers.0.name",
          ]],
          [{ oauth2: { providers: [{ ...GOOGLE, client_id: "" }] } }, [
            "auth.oauth2.providers.0.client_id",
          ]],
          [{ oauth2: { fields: { name: "nope" } } }, [
            "auth.oauth2.fields.name",
          ]],
          ["x", ["auth"]],
        ];
        for (const [auth, fields] of cases) {
          const r = await patch(s, "u_bad", { auth });
          assertStatus(r, 400, JSON.stringify(auth));
          assertEquals(
            Object.keys(r.data.fields).sort(),
            fields.sort(),
            JSON.stringify(auth),
          );
        }
        // On create too.
        const r = await create(s, {
          name: "u_bad2",
          type: "auth",
          auth: { otp: { lenght: 8 } },
        });
        assertStatus(r, 400);
        assertEquals(Object.keys(r.data.fields), ["auth.otp.lenght"]);
        // Nothing of the refused changes was kept.
        const g = await s.request("GET", "/api/v1/schemas/u_bad", {
          token: admin,
        });
        const { templates: _, ...rest } = g.data.auth;
        assertEquals(rest, DEFAULT_AUTH);
      },
    );

    await t.step("a partial change keeps the rest", async () => {
      assertStatus(
        await create(s, {
          name: "u_partial",
          type: "auth",
          auth: { otp: { enabled: true, length: 8 } },
        }),
        201,
      );
      const r = await patch(s, "u_partial", {
        auth: {
          mfa: { enabled: true },
          templates: { otp: { subject: "Code for {APP_NAME}" } },
        },
      });
      assertStatus(r, 200);
      assertEquals(r.data.auth.otp, {
        enabled: true,
        duration: 180,
        length: 8,
      });
      assertEquals(r.data.auth.mfa, { enabled: true, duration: 300 });
      assertEquals(r.data.auth.templates.otp.subject, "Code for {APP_NAME}");
      assert(r.data.auth.templates.otp.body.includes("{CODE}"));
      // A PATCH without auth leaves it.
      const r2 = await patch(s, "u_partial", { has_api: true });
      assertEquals(r2.data.auth, r.data.auth);
      // The library accessor sees the same.
      const opts = authOptions(s.app.schemas.byName("u_partial")!);
      assertEquals(opts.otp.length, 8);
      assertEquals(opts.mfa.enabled, true);
    });

    await t.step("client_secret is write-only", async () => {
      const r = await create(s, {
        name: "u_oauth",
        type: "auth",
        auth: { oauth2: { enabled: true, providers: [GOOGLE] } },
      });
      assertStatus(r, 201);
      assert(!r.text.includes("google-secret-1"), "the secret leaked");
      const p = r.data.auth.oauth2.providers[0];
      assertEquals(p, {
        name: "google",
        display_name: "Google",
        issuer: "",
        preset: "google",
        client_id: "client-1",
        client_secret: "",
        client_secret_set: true,
        scopes: ["openid", "email"],
      });
      const g = await s.request("GET", "/api/v1/schemas/u_oauth", {
        token: admin,
      });
      assert(!g.text.includes("google-secret-1"), "the secret leaked");
      const list = await s.request("GET", "/api/v1/schemas", { token: admin });
      assert(!list.text.includes("google-secret-1"), "the secret leaked");
      const secret = () =>
        authOptions(s.app.schemas.byName("u_oauth")!).oauth2.providers
          .find((p) => p.name === "google")?.client_secret;
      // The GET's answer sent back keeps the secret (client_secret "" and _set).
      assertStatus(await patch(s, "u_oauth", { auth: g.data.auth }), 200);
      assertEquals(secret(), "google-secret-1");
      // A provider list without client_secret keeps it, by name.
      const { client_secret: _, ...noSecret } = GOOGLE;
      const r2 = await patch(s, "u_oauth", {
        auth: {
          oauth2: {
            providers: [{ ...noSecret, display_name: "G" }, {
              name: "corp",
              issuer: "http://127.0.0.1:9/realm",
              client_id: "c2",
            }],
          },
        },
      });
      assertStatus(r2, 200);
      assertEquals(secret(), "google-secret-1");
      assertEquals(r2.data.auth.oauth2.providers[1].client_secret_set, false);
      assertEquals(r2.data.auth.oauth2.providers[1].display_name, "corp");
      assertEquals(r2.data.auth.oauth2.providers[1].scopes, []);
      // A new value replaces it; null clears it.
      await patch(s, "u_oauth", {
        auth: {
          oauth2: { providers: [{ ...GOOGLE, client_secret: "rotated-2" }] },
        },
      });
      assertEquals(secret(), "rotated-2");
      const r3 = await patch(s, "u_oauth", {
        auth: { oauth2: { providers: [{ ...GOOGLE, client_secret: null }] } },
      });
      assertEquals(secret(), "");
      assertEquals(r3.data.auth.oauth2.providers[0].client_secret_set, false);
    });

    await t.step(
      "oauth2.fields name fields of the entity, across renames",
      async () => {
        const r = await create(s, {
          name: "u_fields",
          type: "auth",
          fields: [
            { name: "full_name", type: "string" },
            { name: "picture", type: "url" },
            { name: "age", type: "int" },
          ],
          auth: {
            oauth2: { fields: { name: "full_name", avatar: "picture" } },
          },
        });
        assertStatus(r, 201);
        const bad = await patch(s, "u_fields", {
          auth: { oauth2: { fields: { avatar: "age" } } },
        });
        assertStatus(bad, 400);
        assertEquals(Object.keys(bad.data.fields), [
          "auth.oauth2.fields.avatar",
        ]);
        const email = await patch(s, "u_fields", {
          auth: { oauth2: { fields: { name: "email" } } },
        });
        assertStatus(email, 400, "a built-in field");
        const id = r.data.fields.find((f: { name: string }) =>
          f.name === "full_name"
        ).id;
        const renamed = await patch(s, "u_fields", {
          fields: [{ id, name: "display_name" }],
        });
        assertStatus(renamed, 200);
        assertEquals(renamed.data.auth.oauth2.fields, {
          name: "display_name",
          avatar: "picture",
        });
        const pic = r.data.fields.find((f: { name: string }) =>
          f.name === "picture"
        ).id;
        const dropped = await patch(s, "u_fields", {
          fields: [{ id: pic, op: "delete" }],
        });
        assertStatus(dropped, 400, "a field auth uses cannot go");
        assertStatus(
          await patch(s, "u_fields", {
            fields: [{ id: pic, op: "delete" }],
            auth: { oauth2: { fields: { avatar: null } } },
          }),
          200,
        );
      },
    );

    await t.step("methods: from the auth object", async () => {
      const r = await s.request("GET", "/api/v1/auth/u_partial/methods");
      assertStatus(r, 200);
      assertEquals(r.data, {
        password: { enabled: true },
        otp: { enabled: true },
        mfa: { enabled: true },
        totp: { enabled: false },
        oauth2: { enabled: false, providers: [] },
      });
      await patch(s, "u_partial", {
        auth: { password: { enabled: false }, totp: { enabled: true } },
      });
      const r2 = await s.request("GET", "/api/v1/auth/u_partial/methods");
      assertEquals(r2.data.password, { enabled: false });
      assertEquals(r2.data.totp, { enabled: true });
    });

    await t.step(
      "methods: Route Not Found for entities without auth",
      async () => {
        assertStatus(
          await create(s, { name: "u_hidden", type: "auth", has_api: false }),
          201,
        );
        for (
          const name of ["nosuch", "b1", "mb_admins", "u_hidden", "U_PARTIAL"]
        ) {
          const r = await s.request("GET", `/api/v1/auth/${name}/methods`, {
            token: admin,
          });
          assertEquals([r.status, r.text], [404, ROUTE_NOT_FOUND], name);
        }
      },
    );
  } finally {
    await s.close();
  }
});
