/**
 * Attack review of the dashboard in Chromium: session handling under odd
 * but valid server settings, and pages fed broken API answers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { browserTest } from "./_browser.ts";

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
    await new Promise((r) => setTimeout(r, 2_000));
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
