/**
 * Attack review of the dashboard in Chromium: session handling under odd
 * but valid server settings, and pages fed broken API answers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { browserTest } from "./_browser.ts";
import { pause } from "./_wait.ts";

browserTest(
  "attack: a token lifetime past 24.8 days does not make the dashboard refresh in a loop",
  async ({ s, adminPage, errors }) => {
    // 30 days: the refresh is due in 30 d - 5 min, more than setTimeout's
    // 2^31 - 1 ms; an unclamped delay fires at once, every time.
    const page = await adminPage();
    let refreshes = 0;
    page.on("request", (r) => {
      if (r.url().endsWith("/api/v1/sys/admins/refresh")) refreshes++;
    });
    await page.goto(`${s.url}/mb/about`);
    await page.locator(".topbar").waitFor();
    await pause(2_000); // an absence: nothing to poll for
    assert.equal(refreshes, 0, "no refresh is due for 30 days");
    // Still logged in, on the same page.
    await page.reload();
    await page.locator(".topbar").waitFor();
    assert.match(page.url(), /\/mb\/about$/);
    assert.equal(refreshes, 0);
    assert.deepEqual(errors, []);
  },
  undefined,
  { tokenTtl: 30 * 86_400 },
);

browserTest(
  "attack: the sidebar shows a capped count as 10,000+; its search filters",
  async ({ s, adminPage, errors }) => {
    const admin = await s.adminToken();
    const mk = (body: unknown) =>
      s.request("POST", "/api/v1/schemas", { token: admin, body });
    assert.equal(
      (await mk({
        name: "items",
        type: "base",
        fields: [{ name: "title", type: "string" }],
        rules: {},
      })).status,
      201,
    );
    const now = new Date().toISOString();
    const rows = Array.from(
      { length: 120 },
      (_, i) => [crypto.randomUUID(), now, now, `t${i}`],
    );
    await s.app.storage.run(
      `INSERT INTO "items" ("id", "created", "updated", "title") VALUES ${
        rows.map(() => "(?, ?, ?, ?)").join(", ")
      }`,
      rows.flat(),
    );
    assert.equal(
      (await mk({
        name: "pairs",
        type: "view",
        view_query: "SELECT a.id AS id, b.title AS title FROM items a, items b",
        rules: {},
      })).status,
      201,
    );
    const page = await adminPage();
    const nav = page.getByRole("navigation", { name: "Main" });
    await nav.getByLabel("10,000+ records").waitFor();
    await nav.getByLabel("120 records").waitFor();
    // Each entity with its type; the search box narrows the list.
    const items = nav.getByRole("link", { name: /^items\b/ });
    const pairs = nav.getByRole("link", { name: /^pairs\b/ });
    assert.match(await items.innerText(), /items\s+base\s+120/);
    assert.match(await pairs.innerText(), /pairs\s+view\s+10,000\+/);
    await nav.getByLabel("Search entities").fill("PAI");
    await items.waitFor({ state: "detached" });
    assert.ok(await pairs.isVisible());
    await nav.getByLabel("Search entities").fill("nothing-like-it");
    await nav.getByText("No entity matches.").waitFor();
    await nav.getByLabel("Search entities").fill("");
    await items.waitFor();
    assert.deepEqual(errors, []);
  },
);
