/**
 * Helpers of browser tests, beyond tests/_browser.ts, for files that run
 * their parts on one server: logged-in pages that share one login (speed:
 * a login loads the dashboard twice and costs the server a password hash),
 * the entities of a finished part deleted, and a wait for the next paint
 * instead of a fixed pause.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { BrowserCase } from "./_browser.ts";
import type { TestServer } from "./_server.ts";

/** The dashboard's `localStorage` key of the admin session (dashboard/src/mb.ts). */
const SESSION_KEY = "mb_admin_session";

/**
 * `adminPage` of a browser case with one login for all its pages: the first
 * page logs in through the form, each later one is a fresh page (its own
 * context: none of the other pages' column choices or drafts; its errors
 * collected) given the first one's session, as a second tab would be. Each
 * is left on the dashboard's home page, as after a login.
 */
export function sharedLogin(c: BrowserCase): (width?: number) => Promise<Page> {
  let session: Promise<string> | undefined;
  return async (width = 1280) => {
    if (!session) {
      const first = await c.adminPage(width);
      session = first.evaluate(
        (key) => localStorage.getItem(key) ?? "",
        SESSION_KEY,
      );
      if (!(await session)) throw new Error("the login stored no session");
      return first;
    }
    const page = await c.newPage(width);
    // Any same-origin document gives the page the server's storage.
    await page.goto(`${c.s.url}/api/v1/health`);
    await page.evaluate(
      ([key, value]) => localStorage.setItem(key, value),
      [SESSION_KEY, await session],
    );
    await page.goto(`${c.s.url}/mb`);
    await page.locator(".topbar").waitFor();
    return page;
  };
}

/**
 * Resolves after the page has laid out and painted twice (after a resize,
 * before measuring or a screenshot): no fixed wait.
 */
export async function painted(page: Page): Promise<void> {
  await page.evaluate(
    "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))",
  );
}

/**
 * Deletes the entities a part of a test made, in order (the ones pointing
 * at others first), so the next part sees the server as it would alone.
 */
export async function dropEntities(
  s: TestServer,
  ...names: string[]
): Promise<void> {
  for (const name of names) {
    const r = await s.request("DELETE", `/api/v1/schemas/${name}`, {
      token: await s.adminToken(),
    });
    assert.equal(r.status, 204, `delete ${name}: ${r.text}`);
  }
}
