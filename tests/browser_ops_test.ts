/**
 * The dashboard's logs, admins and health/about pages in Chromium: logs
 * filtered by level, search and dates, keyset paging, an entry's detail,
 * the rate chart, the live tail; admins created, passwords changed (your
 * own session survives, your others do not), deleted, the last one kept;
 * the about page's version, database, file store and uptime. axe-core and screenshots
 * at 1280 and 390 px.
 *
 * One server and one logged-in page for the three pages, in order (the
 * admins' steps end the harness's session last); the live tail runs on a
 * fake clock (a poll is a clock tick after the server's log is written).
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Page, Request } from "playwright-core";
import {
  axeSerious,
  type BrowserCase,
  browserTest,
  scrollWidth,
  shot,
} from "./_browser.ts";
import { painted, sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import { logIdFloor } from "../lib/logs/rows.ts";
import type { LogEntry } from "../lib/logs/types.ts";
import { poll } from "./_wait.ts";

/** axe, no overflow, and a screenshot at both widths (same page). */
async function checkBoth(page: Page, name: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await painted(page);
    assert.deepEqual(await axeSerious(page), [], `${name} at ${width}`);
    assert.equal(await scrollWidth(page), width, `${name} fits ${width} px`);
    await shot(page, name);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The live tail's poll interval (`TAIL_MS` of dashboard/src/logs/live_tail.ts). */
const TAIL_MS = 2000;

let seq = 0;
/** A stored request entry at local time `ms`. */
function entryAt(ms: number, status: number, path: string): LogEntry {
  seq++;
  return {
    id: `${logIdFloor(ms)}-${seq.toString(16).padStart(8, "0")}-brtest`,
    time: new Date(ms).toISOString(),
    level: status >= 500 ? "error" : status >= 400 ? "warn" : "info",
    type: "request",
    message: "",
    method: "GET",
    path,
    status,
    duration_ms: 2.5,
    ip: "203.0.113.9",
    auth_id: null,
    auth_entity: null,
    request_id: `known-${seq}`,
    data: null,
  };
}

/** The table's rows (text). */
async function rows(page: Page): Promise<string[]> {
  return await page.locator("table.log-table tbody tr").allInnerTexts();
}

/**
 * The rows once they satisfy `ok` (up to 5 s): after new filters the page
 * keeps the rows it shows until the filtered ones arrive, and its "Page n"
 * line is already there, so only the rows themselves tell.
 */
async function rowsUntil(
  page: Page,
  ok: (r: string[]) => boolean,
  what: string,
): Promise<string[]> {
  let r: string[] = [];
  return await poll(what, async () => {
    r = await rows(page);
    return r.length > 0 && ok(r) ? r : undefined;
  }).catch((e) => assert.fail(`${e.message}\n${r.join("\n")}`));
}

/** Waits until the page (after filters) has loaded its entries. */
async function settled(page: Page): Promise<void> {
  await page.getByText(/^Page \d+ · /).waitFor();
}

async function seedLogs(s: TestServer): Promise<void> {
  await s.adminToken();
  for (let i = 0; i < 3; i++) await s.request("GET", "/api/v1/health");
  for (let i = 0; i < 2; i++) await s.request("GET", "/api/v1/no-such-route");
  s.app.log.warn("Known app warning", { nested: { answer: 42 }, list: [1, 2] });
  // 25 requests on a known local day, one of them a 503.
  const day = new Date(2021, 5, 1, 10, 0, 0).getTime();
  const known = Array.from(
    { length: 25 },
    (_, i) => entryAt(day + i * 60_000, i === 7 ? 503 : 200, `/known/${i}`),
  );
  await s.app.logs.insert(known);
  await s.app.log.flush();
}

/**
 * A live tail poll of the logs page: tagged with the page's request id, and
 * 200 entries from a date (the page's own loads ask for a page).
 */
function isTailPoll(r: Request): boolean {
  const u = new URL(r.url());
  return u.pathname === "/api/v1/sys/logs" &&
    u.searchParams.get("limit") === "200" &&
    u.searchParams.has("start_date") &&
    (r.headers()["x-request-id"] ?? "").startsWith("mbtail-");
}

/**
 * One poll of the live tail on the page's fake clock, once the server's
 * log is written: resolves when its answer has arrived.
 */
async function tailTick(page: Page, s: TestServer): Promise<void> {
  await s.app.log.flush();
  const answered = page.waitForResponse((r) => isTailPoll(r.request()));
  await page.clock.runFor(TAIL_MS);
  await answered;
}

/** Logs: filters, paging, detail, chart, live tail. */
async function logsSteps(
  { s, errors }: BrowserCase,
  page: Page,
  adminPage: () => Promise<Page>,
): Promise<void> {
  await page.goto(`${s.url}/mb/logs`);
  await page.getByRole("heading", { name: "Logs", exact: true }).waitFor();
  await settled(page);

  // The chart: an image with a summary and bars.
  const chart = page.getByRole("img", { name: /^Requests from / });
  await chart.waitFor();
  assert.ok((await page.locator("svg.rate-svg g.bar").count()) > 0);
  await checkBoth(page, "logs");

  // Level (exact): only warnings.
  await page.getByLabel(/^Level/).selectOption("warn");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL(/level=warn/);
  let r = await rowsUntil(
    page,
    (r) => r.every((t) => /\bwarn\b/.test(t)),
    "only warnings",
  );
  assert.ok(r.length >= 3, `warn rows: ${r.length}`);
  assert.ok(r.every((t) => /\bwarn\b/.test(t)), r.join("\n"));
  assert.ok(r.some((t) => t.includes("Known app warning")));

  // Minimum level: warnings and errors (the 503 of the known day).
  await page.getByLabel(/^Level/).selectOption("");
  await page.getByLabel("Minimum level").selectOption("warn");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL(/min_level=warn/);
  r = await rowsUntil(
    page,
    (r) =>
      r.every((t) => /\b(warn|error)\b/.test(t)) &&
      r.some((t) => /\berror\b.*\/known\/7/.test(t)),
    "warnings and errors",
  );
  assert.ok(r.some((t) => /\bwarn\b/.test(t)), r.join("\n"));

  // Search, run by Enter.
  await page.getByRole("button", { name: "Clear" }).click();
  await page.waitForURL((u) => !u.search.includes("level="));
  await page.getByLabel(/^Search logs/).fill("no-such-route");
  await page.getByLabel(/^Search logs/).press("Enter");
  await page.waitForURL(/search=no-such-route/);
  r = await rowsUntil(
    page,
    (r) => r.every((t) => t.includes("no-such-route")),
    "the search's rows",
  );
  assert.equal(r.length, 2, r.join("\n"));
  assert.ok(r.every((t) => t.includes("/api/v1/no-such-route")));

  // Dates (local) and the page size: 25 known entries → 20 + 5.
  await page.getByRole("button", { name: "Clear" }).click();
  await page.waitForURL((u) => !u.search.includes("search="));
  await page.getByLabel(/^From/).fill("2021-06-01T00:00");
  await page.getByLabel(/^To/).fill("2021-06-02T00:00");
  await page.getByLabel(/^Page size/).selectOption("20");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL(/start_date=2021-0/);
  assert.match(page.url(), /end_date=2021-06-0/);
  const first = await rowsUntil(
    page,
    (r) => r.every((t) => t.includes("/known/")),
    "the known day's rows",
  );
  assert.equal(first.length, 20);
  assert.ok(first[0].includes("/known/24"), first[0]);
  // The chart follows the dates: 25 requests, one 5xx.
  await page.getByRole("img", {
    name: /25 requests, 0 answered 4xx, 1 answered 5xx/,
  })
    .waitFor();
  await checkBoth(page, "logs_filtered");
  await page.getByRole("button", { name: "Next" }).click();
  await page.getByText("Page 2 · 5 entries").waitFor();
  r = await rows(page);
  assert.equal(r.length, 5);
  assert.ok(r[4].includes("/known/0"), r[4]);
  assert.ok(await page.getByRole("button", { name: "Next" }).isDisabled());
  await page.getByRole("button", { name: "Previous" }).click();
  await page.getByText("Page 1 · 20 entries").waitFor();
  assert.deepEqual(await rows(page), first);

  // A reload keeps the filters (they live in the URL).
  await page.reload();
  await settled(page);
  assert.equal(await page.getByLabel(/^Page size/).inputValue(), "20");
  assert.equal((await rows(page)).length, 20);

  // An entry's detail: the 503 one, opened by its link.
  await page.getByRole("row", { name: /\/known\/7 503/ }).getByRole("link")
    .click();
  await page.waitForURL(/\/mb\/logs\/[0-9a-f]{12}-/);
  await page.getByRole("heading", { name: "Log entry" }).waitFor();
  await page.getByText("GET /known/7 503").first().waitFor();
  await page.getByText("203.0.113.9").waitFor();
  await page.getByText("This entry has no data.").waitFor();
  await checkBoth(page, "log_detail_request");

  // An app entry's data, pretty-printed; a row click opens it.
  await page.goto(`${s.url}/mb/logs?search=Known+app+warning`);
  await settled(page);
  await page.getByRole("cell", { name: "Known app warning" }).click();
  await page.waitForURL(/\/mb\/logs\/[0-9a-f]{12}-/);
  const data = page.getByRole("region", { name: "Entry data as JSON" });
  await data.waitFor();
  assert.match(
    await data.innerText(),
    /"nested": \{\n\s+"answer": 42\n\s+\}/,
  );
  await checkBoth(page, "log_detail");

  // A missing entry: 404 in words.
  await page.goto(`${s.url}/mb/logs/0190aaaaaaaa-00000001-zzzzzz`);
  await page.getByRole("alert").getByText(/Cannot find log entry/).waitFor();

  // Live tail (a page on a fake clock): a new request shows up at the top
  // while on.
  const tail = await adminPage();
  await tail.clock.install();
  const polls: string[] = [];
  tail.on("request", (r) => {
    if (isTailPoll(r)) polls.push(r.url());
  });
  await tail.goto(`${s.url}/mb/logs`);
  await settled(tail);
  const toggle = tail.getByRole("button", { name: "Live tail" });
  assert.equal(await toggle.getAttribute("aria-pressed"), "false");
  await toggle.click();
  assert.equal(await toggle.getAttribute("aria-pressed"), "true");
  await s.request("GET", "/api/v1/tail-probe-one");
  await tailTick(tail, s);
  const probe = tail.locator("table.log-table tbody tr", {
    hasText: "/api/v1/tail-probe-one",
  });
  await probe.waitFor({ timeout: 8000 });
  assert.match((await rows(tail))[0], /tail-probe-one/);
  assert.match(await probe.getAttribute("class") ?? "", /fresh/);
  const status = tail.locator(".logs-page [role=status]");
  assert.match(await status.innerText(), /\d+ new entr(y|ies)/);
  // Its own loads and polls are not shown as new traffic (two more polls,
  // each after the log of the one before is written).
  const own = async () =>
    (await rows(tail)).filter((t) => t.includes("/api/v1/sys/logs")).length;
  const before = await own();
  await tailTick(tail, s);
  await tailTick(tail, s);
  assert.equal(await own(), before);
  // Off: nothing new arrives, no poll is sent.
  await toggle.click();
  assert.equal(await toggle.getAttribute("aria-pressed"), "false");
  await s.request("GET", "/api/v1/tail-probe-two");
  await s.app.log.flush();
  const sent = polls.length;
  await tail.clock.runFor(2 * TAIL_MS + 500);
  // A marker request after the clock's run: the page's requests are seen
  // in order, so a poll of that run would be counted by then.
  await Promise.all([
    tail.waitForRequest((r) => r.url().endsWith("/api/v1/health?marker")),
    tail.evaluate(() => fetch("/api/v1/health?marker")),
  ]);
  assert.equal(polls.length, sent, "no poll while off");
  assert.ok(!(await rows(tail)).some((t) => t.includes("tail-probe-two")));
  await tail.context().close();
  assert.deepEqual(errors, []);
}

/** The row of an admin in the table. */
function adminRow(page: Page, email: string) {
  return page.locator(".admins-table tbody tr", { hasText: email });
}

/**
 * Admins: create, change passwords, delete, the last admin is kept (last:
 * the harness's own session ends here).
 */
async function adminsSteps(
  { s, errors }: BrowserCase,
  page: Page,
): Promise<void> {
  const harness = await s.adminToken();
  await page.goto(`${s.url}/mb/admins`);
  await page.getByRole("heading", { name: "Admins" }).waitFor();
  const me = adminRow(page, "admin@example.com");
  await me.getByText("you", { exact: true }).waitFor();
  // Alone: Delete is disabled and the reason is given.
  const delMe = page.getByRole("button", {
    name: "Delete admin@example.com",
  });
  assert.ok(await delMe.isDisabled());
  await page.getByText("The only admin cannot be deleted").waitFor();
  await checkBoth(page, "admins");

  // Create: the API's field error, then success.
  await page.getByLabel(/^Email/).fill("second@example.com");
  await page.getByLabel(/^Password/).fill("short");
  await page.getByRole("button", { name: "Create admin" }).click();
  await page.locator(".field.invalid").getByRole("alert").waitFor();
  assert.match(
    await page.locator(".field.invalid").innerText(),
    /password/i,
  );
  await page.getByLabel(/^Password/).fill(
    "second-password-1",
  );
  await page.getByRole("button", { name: "Create admin" }).click();
  await page.getByText("Admin second@example.com created").waitFor();
  await adminRow(page, "second@example.com").waitFor();
  await poll("two admins", async () => !(await delMe.isDisabled()));
  // The same email again: refused in words.
  await page.getByLabel(/^Email/).fill("second@example.com");
  await page.getByLabel(/^Password/).fill(
    "second-password-1",
  );
  await page.getByRole("button", { name: "Create admin" }).click();
  await page.getByRole("alert").filter({
    hasText: /already|exists|taken|unique/i,
  })
    .first().waitFor();

  // Change another admin's password (a dialog).
  await page.getByRole("button", {
    name: "Change password of second@example.com",
  }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel(/^New password/).fill("second-password-2");
  await dialog.getByLabel("Repeat the new password").fill("different-2");
  await dialog.getByRole("button", { name: "Change password" }).click();
  await dialog.getByText("The two passwords differ.").waitFor();
  await dialog.getByLabel("Repeat the new password").fill(
    "second-password-2",
  );
  assert.deepEqual(await axeSerious(page), [], "password dialog");
  await shot(page, "admins_password");
  await dialog.getByRole("button", { name: "Change password" }).click();
  await page.getByText(/Password of second@example.com changed/).waitFor();
  const login = await s.request("POST", "/api/v1/sys/admins/login", {
    body: { identity: "second@example.com", password: "second-password-2" },
  });
  assert.equal(login.status, 200, login.text);

  // Delete the second admin, confirmed.
  await page.getByRole("button", { name: "Delete second@example.com" })
    .click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete admin" })
    .click();
  await page.getByText("Admin second@example.com deleted").waitFor();
  await adminRow(page, "second@example.com").waitFor({ state: "detached" });
  await poll("alone again", () => delMe.isDisabled());

  // A page that still lists two admins: the API's 409 in words.
  const third = await s.request("POST", "/api/v1/sys/admins", {
    token: harness,
    body: { email: "third@example.com", password: "third-password-1" },
  });
  assert.equal(third.status, 201, third.text);
  await page.reload();
  await adminRow(page, "third@example.com").waitFor();
  const gone = await s.request(
    "DELETE",
    `/api/v1/sys/admins/${third.data.id}`,
    {
      token: harness,
    },
  );
  assert.equal(gone.status, 204);
  await delMe.click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete admin" })
    .click();
  await page.locator(".error-box").getByText(/it is the last admin/)
    .waitFor();
  await poll("the reload shows one admin again", () => delMe.isDisabled());

  // Your own password: this session stays, your other sessions end.
  await page.getByRole("button", {
    name: "Change password of admin@example.com",
  }).click();
  await dialog.getByText("this one stays logged in").waitFor();
  await dialog.getByLabel(/^New password/).fill("admin-password-new-1");
  await dialog.getByLabel("Repeat the new password").fill(
    "admin-password-new-1",
  );
  await dialog.getByRole("button", { name: "Change password" }).click();
  await page.getByText("Your password was changed").waitFor();
  const other = await s.request("GET", "/api/v1/sys/admins", {
    token: harness,
  });
  assert.equal(other.status, 401, "the other session was revoked");
  await page.goto(`${s.url}/mb/admins`);
  await me.getByText("you", { exact: true }).waitFor();
  assert.equal(
    await page.getByRole("heading", { name: "Admin login" }).count(),
    0,
  );
  assert.deepEqual(errors, []);
}

/** About: version, database, file store and uptime. */
async function aboutSteps(
  { s, errors }: BrowserCase,
  page: Page,
): Promise<void> {
  await page.goto(`${s.url}/mb/about`);
  await page.getByRole("heading", { name: "Health & about" }).waitFor();
  await page.getByText("Moonbase 0.3.7", { exact: true }).waitFor();
  await page.getByText(s.db === "sqlite" ? "SQLite" : "PostgreSQL").waitFor();
  const text = await page.locator(".about-page").innerText();
  assert.match(text, /Uptime\s+\d+ (s|min)/);
  assert.match(text, /Files\s+on this server's disk \(reachable\)/);
  assert.ok(text.includes(`${s.url}/api/v1`), "API base URL");
  assert.ok(!/postgres(ql)?:\/\//.test(text), "no connection string");
  await page.getByRole("button", { name: "Check again" }).click();
  await checkBoth(page, "about");
  assert.deepEqual(errors, []);
}

browserTest(
  "ops pages: logs (filters, paging, detail, chart, live tail), about, admins",
  async (c) => {
    await seedLogs(c.s);
    const adminPage = sharedLogin(c);
    const page = await adminPage();
    await logsSteps(c, page, adminPage);
    await aboutSteps(c, page);
    await adminsSteps(c, page);
  },
);
