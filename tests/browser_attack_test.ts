/**
 * Attack review of the dashboard in Chromium: session handling under odd
 * but valid server settings, and pages fed broken API answers.
 *
 * One server (tokens valid 30 days) and one login for both parts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type BrowserCase, browserTest } from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";

/**
 * attack: a token lifetime past 24.8 days (the server's `tokenTtl`) does not
 * make the dashboard refresh in a loop
 */
async function longTokenSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  // 30 days: the refresh is due in 30 d - 5 min, more than setTimeout's
  // 2^31 - 1 ms; an unclamped delay fires at once, every time.
  const page = await adminPage();
  let refreshes = 0;
  page.on("request", (r) => {
    if (r.url().endsWith("/api/v1/sys/admins/refresh")) refreshes++;
  });
  // The page on a fake clock: ten minutes pass at once. A refresh due
  // within them (an unclamped delay fires at once) would have been sent by
  // the time a request made after them is.
  await page.clock.install();
  await page.goto(`${s.url}/mb/about`);
  await page.locator(".topbar").waitFor();
  await page.clock.runFor(10 * 60_000);
  await Promise.all([
    page.waitForRequest((r) => r.url().endsWith("/api/v1/health?marker")),
    page.evaluate(() => fetch("/api/v1/health?marker")),
  ]);
  assert.equal(refreshes, 0, "no refresh is due for 30 days");
  // Still logged in, on the same page.
  await page.reload();
  await page.locator(".topbar").waitFor();
  assert.match(page.url(), /\/mb\/about$/);
  assert.equal(refreshes, 0);
  assert.deepEqual(errors, []);
}

/** attack: the sidebar shows a capped count as 10,000+; its search filters */
async function sidebarSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
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
}

browserTest(
  "attack: a 30-day token lifetime; the sidebar's capped count and search",
  async (c) => {
    const parts = { ...c, adminPage: sharedLogin(c) };
    await longTokenSteps(parts);
    await sidebarSteps(parts);
  },
  undefined,
  { tokenTtl: 30 * 86_400 },
);
