/**
 * The dashboard shell in Chromium: first run, login, deep links.
 * (Page-specific flows live in `browser_*_test.ts`.)
 */
import assert from "node:assert/strict";
import {
  axeSerious,
  browserTestAllDbs,
  scrollWidth,
  shot,
  SHOTS_DB,
} from "./_browser.ts";

browserTestAllDbs(
  "dashboard: first run shows how to claim the server, then setup logs in",
  async ({ s, newPage, errors }) => {
    const page = await newPage();
    await page.goto(`${s.url}/mb`);
    await page.getByText("This server has no admin yet").waitFor();
    await page.goto(`${s.url}/mb/setup?token=${s.app.setupToken}`);
    await page.getByLabel("Email").fill("root@example.com");
    await page.getByLabel("Password").fill("root-password-1");
    await page.getByRole("button", { name: "Create admin" }).click();
    await page.locator(".topbar").waitFor();
    assert.deepEqual(await axeSerious(page), []);
    assert.deepEqual(errors, []);
  },
);

browserTestAllDbs(
  "dashboard: a deep link loads the app and returns there after login",
  async ({ s, newPage, errors }) => {
    await s.adminToken();
    const page = await newPage(390);
    await page.goto(`${s.url}/mb/about`);
    await page.getByRole("heading", { name: "Admin login" }).waitFor();
    assert.deepEqual(await axeSerious(page), []);
    assert.equal(await scrollWidth(page), 390);
    if (s.db === SHOTS_DB) await shot(page, "login");
    await page.getByLabel("Email").fill("admin@example.com");
    await page.getByLabel("Password").fill(s.adminPassword);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/mb\/about$/);
    assert.deepEqual(errors, []);
  },
);
