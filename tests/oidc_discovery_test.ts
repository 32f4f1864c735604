/**
 * `POST /api/v1/sys/oauth2/discovery {issuer}`: the dashboard's check of an
 * OAuth2 provider, fetched by the server. Admin only; a local issuer's
 * endpoints; 502 with the reason for an issuer that fails; 400 for an
 * issuer that is not https (http only for localhost). The check resolves
 * the issuer as a sign-in would (lib/auth/oauth2/issuer_check.ts); the
 * fetch's bounds (time, size, JSON, redirects) have their unit cases in
 * lib/auth/oauth2/. One server per database; the steps share it and change
 * nothing.
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
import { createSchema, fastUser, issue } from "./_auth_fixtures.ts";

const CHECK = "/api/v1/sys/oauth2/discovery";

forEachDb("oauth2 discovery check", async (t, db) => {
  const s = await startServer(db);
  const ac = new AbortController();
  let base = "";
  const idp = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    (req) => {
      const p = new URL(req.url).pathname;
      // `/other` names an issuer that is not itself.
      const issuer = p.startsWith("/other/") ? "https://idp.example.com" : base;
      return Response.json({
        issuer,
        authorization_endpoint: `${base}/auth`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks`,
      });
    },
  );
  base = `http://127.0.0.1:${idp.addr.port}`;
  try {
    const admin = await s.adminToken();

    await t.step("an admin gets the issuer's endpoints", async () => {
      const r = await s.request("POST", CHECK, {
        token: admin,
        body: { issuer: base },
      });
      assertStatus(r, 200);
      assertEquals(r.data, {
        issuer: base,
        authorization_endpoint: `${base}/auth`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks`,
      });
    });

    await t.step("an issuer that fails is 502 with the reason", async () => {
      const r = await s.request("POST", CHECK, {
        token: admin,
        body: { issuer: `${base}/other` },
      });
      assertStatus(r, 502);
      assert(
        /^Cannot check the issuer: the discovery document .* names the issuer "https:\/\/idp\.example\.com"/
          .test(r.error),
        r.error,
      );
      const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const closed = (l.addr as Deno.NetAddr).port;
      l.close();
      const down = await s.request("POST", CHECK, {
        token: admin,
        body: { issuer: `http://127.0.0.1:${closed}` },
      });
      assertStatus(down, 502);
      assert(/could not be reached/.test(down.error), down.error);
    });

    await t.step("an issuer that is not https is 400, unfetched", async () => {
      for (const issuer of ["http://idp.example.com", "nope", 7]) {
        const r = await s.request("POST", CHECK, {
          token: admin,
          body: { issuer },
        });
        assertStatus(r, 400);
        assertEquals(r.data.fields.issuer.code, "invalid_url");
      }
    });

    await t.step("guests 401, users 403", async () => {
      assertStatus(
        await s.request("POST", CHECK, { body: { issuer: base } }),
        401,
      );
      await createSchema(s, admin, { name: "people", type: "auth" });
      const u = await fastUser(s, "people", { email: "p@example.com" });
      const r = await s.request("POST", CHECK, {
        token: await issue(s, "people", u.id),
        body: { issuer: base },
      });
      assertStatus(r, 403);
    });
  } finally {
    ac.abort();
    await idp.finished;
    await s.close();
  }
});
