/**
 * The dashboard's HTTP side: deep links serve the app with its CSP, assets
 * are served from `/mb/assets/`, the first-run state is public, record
 * counts are for admins only.
 */
import assert from "node:assert/strict";
import { forEachDb, seedUser, startServer } from "./_server.ts";

forEachDb("dashboard routes", async (t, db) => {
  const s = await startServer(db);
  try {
    await t.step(
      "every /mb path serves the app with a strict CSP",
      async () => {
        for (
          const p of [
            "/mb",
            "/mb/",
            "/mb/entities/posts/records/x",
            "/mb/logs?level=warn",
          ]
        ) {
          const res = await fetch(s.url + p);
          const html = await res.text();
          assert.equal(res.status, 200, p);
          assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
          const csp = res.headers.get("content-security-policy") ?? "";
          assert.match(csp, /script-src 'self'/);
          assert.doesNotMatch(csp, /unsafe/);
          assert.match(html, /\/mb\/assets\/app\.js/);
          assert.doesNotMatch(html, /<script>/, "no inline script");
        }
      },
    );
    await t.step(
      "assets: js, css, favicon; anything else is a 404",
      async () => {
        const types: Record<string, RegExp> = {
          "app.js": /^text\/javascript/,
          "app.css": /^text\/css/,
          "favicon.svg": /^image\/svg\+xml/,
        };
        for (const [name, type] of Object.entries(types)) {
          const res = await fetch(`${s.url}/mb/assets/${name}`);
          await res.body?.cancel();
          assert.equal(res.status, 200, name);
          assert.match(res.headers.get("content-type") ?? "", type);
        }
        for (
          const name of ["index.html", "..%2Fdeno.json", "build.ts", "nope.js"]
        ) {
          const res = await fetch(`${s.url}/mb/assets/${name}`);
          await res.body?.cancel();
          assert.equal(res.status, 404, name);
        }
      },
    );
    await t.step(
      "first-run state is public and flips once an admin exists",
      async () => {
        const fresh = await startServer(db);
        try {
          const before = await fresh.request("GET", "/api/v1/sys/admins/setup");
          assert.deepEqual(before.data, { required: true });
          assert.ok(!before.text.includes(fresh.app.setupToken ?? "?"));
          await fresh.adminToken();
          const after = await fresh.request("GET", "/api/v1/sys/admins/setup");
          assert.deepEqual(after.data, { required: false });
        } finally {
          await fresh.close();
        }
      },
    );
    await t.step(
      "record counts: admins only, one number per entity",
      async () => {
        const token = await s.adminToken();
        await s.request("POST", "/api/v1/schemas", {
          token,
          body: {
            name: "notes",
            type: "auth",
            fields: [],
            rules: { list: { mode: "public", expr: "" } },
          },
        });
        await seedUser(s, "notes", { email: "n1@example.com" }, "password-n1");
        await seedUser(s, "notes", { email: "n2@example.com" }, "password-n2");
        const r = await s.request("GET", "/api/v1/sys/counts", { token });
        assert.equal(r.status, 200);
        assert.equal((r.data as Record<string, number>).notes, 2);
        assert.equal((r.data as Record<string, number>).mb_admins, 1);
        const guest = await s.request("GET", "/api/v1/sys/counts");
        assert.equal(guest.status, 401);
      },
    );
  } finally {
    await s.close();
  }
});
