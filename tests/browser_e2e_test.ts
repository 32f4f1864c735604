/**
 * End to end, as an administrator would do it, through the dashboard only
 * (the API only checks results): the setup link, the first admin, log out
 * and in, an entity with every field type, a custom list rule checked live,
 * records with an image and several files, created / edited / deleted,
 * sort, filter, search, pages and count, "test as" a guest, the files page,
 * logs filtered, a second admin created / re-passworded / deleted, log out.
 * Every page: axe (no serious or critical violation), no page error, no
 * horizontal overflow, and a screenshot `tour_NN_<page>` at 1280 and 390 px
 * (taken by the first database's run).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  axeSerious,
  browserTestAllDbs,
  scrollWidth,
  shot,
  SHOTS_DB,
} from "./_browser.ts";
import type { TestServer } from "./_server.ts";
import { imageLoads, makePng, textFile } from "./_records_fixtures.ts";
import { poll } from "./_wait.ts";

const EMAIL = "owner@example.com";
const PASSWORD = "owner-password-1";
const GREEK = [
  "Alpha",
  "Beta",
  "Gamma",
  "Delta",
  "Epsilon",
  "Zeta",
  "Eta",
  "Theta",
  "Iota",
  "Kappa",
  "Lambda",
  "Mu",
];

/**
 * A tour stop: axe, no page error, nothing wider than the viewport; then
 * the screenshot (on one database's run: the pages are the same on both).
 */
function tourOf(s: TestServer, errors: string[]) {
  return async (page: Page, name: string) => {
    await page.evaluate("scrollTo(0, 0)");
    const width = page.viewportSize()!.width;
    assert.deepEqual(await axeSerious(page), [], `${name} at ${width}`);
    assert.equal(await scrollWidth(page), width, `${name} fits ${width} px`);
    assert.deepEqual(errors, [], `${name} at ${width}`);
    if (s.db === SHOTS_DB) await shot(page, name);
  };
}

/** A GET/POST through the API (checks only), as `token` or a guest. */
async function call(
  s: TestServer,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
) {
  return await s.request(method, `/api/v1${path}`, { token, body });
}

async function login(page: Page, password = PASSWORD) {
  await page.getByRole("heading", { name: "Admin login" }).waitFor();
  await page.getByLabel("Email").fill(EMAIL);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator(".topbar").waitFor();
}

/** Adds a field in the entity form; returns its panel. */
async function addField(page: Page, name: string, type: string) {
  await page.getByRole("button", { name: "+ Add field" }).click();
  const p = page.locator("fieldset.field-panel").last();
  await p.getByLabel("Name").fill(name);
  await p.getByLabel("Type").selectOption(type);
  return p;
}

/** The text of one column's cells, top to bottom. */
async function column(page: Page, name: string): Promise<string[]> {
  const heads = await page.locator(".records-table thead th")
    .allTextContents();
  const at = heads.findIndex((h) => h.startsWith(name)) + 1;
  return await page.locator(`.records-table tbody td:nth-child(${at})`)
    .allTextContents();
}

/** Opens a sidebar link; at 390 px through the Menu button. */
async function nav(page: Page, name: string | RegExp) {
  const menu = page.getByRole("button", { name: "Menu" });
  if (await menu.isVisible()) await menu.click();
  await page.getByRole("navigation", { name: "Main" })
    .getByRole("link", { name, exact: true }).click();
}

browserTestAllDbs(
  "e2e: an administrator's tour of the dashboard",
  async ({ s, newPage, errors }) => {
    const tour = tourOf(s, errors);
    const page = await newPage(1280);
    const narrow = await newPage(390);

    // ── 1. First run: /mb explains, the setup link creates the admin. ──
    await page.goto(`${s.url}/mb`);
    await page.getByRole("heading", { name: "Welcome to Moonbase" }).waitFor();
    await page.getByText("No admin yet. Create one at").waitFor();
    assert.deepEqual(await axeSerious(page), []);
    const setupToken = s.app.setupToken;
    assert.ok(setupToken, "the server printed a setup link");
    const setupUrl = `${s.url}/mb/setup?token=${setupToken}`;
    await narrow.goto(setupUrl);
    await narrow.getByRole("heading", { name: "Create the first admin" })
      .waitFor();
    await tour(narrow, "tour_01_setup");
    await page.goto(setupUrl);
    await page.getByLabel("Email").fill(EMAIL);
    await page.getByLabel("Password").fill(PASSWORD);
    await tour(page, "tour_01_setup");
    await page.getByRole("button", { name: "Create admin" }).click();
    await page.locator(".topbar").getByText(EMAIL).waitFor();
    await page.getByRole("link", { name: "Create your first entity" })
      .waitFor();
    const setupNow = await call(s, "GET", "/sys/admins/setup");
    assert.equal(setupNow.data.required, false);
    await page.getByRole("button", { name: "Log out" }).click();
    await login(page);
    const token = (await call(s, "POST", "/sys/admins/login", undefined, {
      identity: EMAIL,
      password: PASSWORD,
    })).data.token as string;

    // ── 2. An entity with every field type. ──
    await nav(page, "+ New entity");
    await page.getByLabel("Entity name").fill("articles");
    let p = await addField(page, "title", "string");
    await p.getByLabel("Required").check();
    await p.getByLabel("Min length").fill("2");
    await addField(page, "body", "text");
    await addField(page, "contact", "email");
    await addField(page, "site", "url");
    p = await addField(page, "views", "int");
    await p.getByLabel("Min value").fill("0");
    await addField(page, "score", "double");
    await addField(page, "published", "bool");
    await addField(page, "when", "date");
    await addField(page, "meta", "json");
    p = await addField(page, "status", "select");
    for (const v of ["draft", "live"]) {
      await p.getByLabel("New value").fill(v);
      await p.getByRole("button", { name: "Add value" }).click();
    }
    p = await addField(page, "parent", "relation");
    await p.getByLabel("Target entity").selectOption("articles");
    p = await addField(page, "cover", "file");
    await p.getByLabel("New MIME type").fill("image/*");
    await p.getByRole("button", { name: "Add MIME type" }).click();
    p = await addField(page, "attachments", "files");
    await p.getByLabel("Max files").fill("3");
    await tour(page, "tour_02_entity_form");
    await page.getByRole("button", { name: "Create entity" }).click();
    await page.waitForURL(/\/mb\/entities\/articles$/);
    await page.getByText("Entity articles created").waitFor();
    await page.getByText("No records yet.").waitFor();
    const schema = (await call(s, "GET", "/schemas/articles", token)).data;
    assert.deepEqual(
      // deno-lint-ignore no-explicit-any
      schema.fields.filter((f: any) => !f.system).map((f: any) => f.type),
      [
        "string",
        "text",
        "email",
        "url",
        "int",
        "double",
        "bool",
        "date",
        "json",
        "select",
        "relation",
        "file",
        "files",
      ],
    );

    // ── 3. A custom list rule, checked as it is typed, then saved. ──
    await page.getByRole("link", { name: "Rules", exact: true }).click();
    await page.getByLabel("Who may list records").selectOption({
      label: "Custom expression",
    });
    const listRule = page.getByLabel("Rule for listing", { exact: true });
    await listRule.fill("record.published = true");
    await page.getByText(
      'Unexpected "=" (to compare, write "==") — at character 18',
    ).waitFor();
    assert.equal(await listRule.getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator(".rule-mirror mark").textContent(), "=");
    await listRule.fill("record.published == true");
    await page.getByText("✓ Valid").first().waitFor();
    await page.getByRole("button", { name: "Save rules" }).click();
    await page.getByText("Rules of articles saved").waitFor();
    const rules = (await call(s, "GET", "/schemas/articles", token)).data.rules;
    assert.deepEqual(rules.list, {
      mode: "custom",
      expr: "record.published == true",
    });

    // ── 4. Records in the editor: every input, an image and two files. ──
    await page.getByRole("link", { name: "Records", exact: true }).click();
    await page.getByRole("link", { name: "New record" }).click();
    await page.getByRole("heading", { name: "New articles record" }).waitFor();
    await page.getByLabel("title").fill("A"); // under min 2: the API says so
    await page.getByLabel("body").fill("The first article,\non two lines.");
    await page.getByLabel("contact").fill("alpha@example.com");
    await page.getByLabel("site").fill("https://example.com/alpha");
    await page.getByLabel("views").fill("10");
    await page.getByLabel("score").fill("4.5");
    await page.getByLabel("published").check();
    await page.getByLabel("when").fill("2024-05-01T12:30");
    await page.getByLabel("meta").fill("{ tags: [");
    await page.getByText(/Not valid JSON/).waitFor();
    await page.getByLabel("meta").fill('{"tags": ["moon", "base"]}');
    await page.getByLabel("status").selectOption("live");
    await page.getByLabel("cover", { exact: true }).setInputFiles({
      name: "moon.png",
      mimeType: "image/png",
      buffer: await makePng(48, [211, 91, 47]),
    });
    await page.locator(".new-file img.thumb").waitFor();
    await page.getByLabel("attachments", { exact: true }).setInputFiles([
      textFile("notes.txt", "first file"),
      textFile("draft.txt", "second file"),
    ]);
    await tour(page, "tour_05_record_editor");
    await page.getByRole("button", { name: "Create" }).click();
    await page.locator("#field-title-error").waitFor();
    await page.getByLabel("title").fill("Alpha");
    await page.getByRole("button", { name: "Create" }).click();
    await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
    await page.getByText("Record created").waitFor();
    const alphaId = page.url().split("/").pop()!;
    assert.ok(
      await imageLoads(page.locator(".file-list img.thumb").first()),
      "the stored image shows",
    );
    const alpha =
      (await call(s, "GET", `/entities/articles/${alphaId}`, token)).data;
    assert.equal(alpha.title, "Alpha");
    assert.equal(alpha.contact, "alpha@example.com");
    assert.equal(alpha.views, 10);
    assert.equal(alpha.score, 4.5);
    assert.equal(alpha.published, true);
    assert.deepEqual(alpha.meta, { tags: ["moon", "base"] });
    assert.equal(alpha.status, "live");
    assert.match(alpha.cover, /^moon_\w+\.png$/);
    assert.deepEqual(
      alpha.attachments.map((n: string) => n.split("_")[0]),
      ["notes", "draft"],
    );

    // Eleven more, one pointing at Alpha (relation picker); odd ones published.
    for (let i = 1; i < GREEK.length; i++) {
      await page.getByRole("link", { name: "Back to articles" }).click();
      await page.getByRole("link", { name: "New record" }).click();
      await page.getByLabel("title").fill(GREEK[i]);
      await page.getByLabel("views").fill(String((i + 1) * 10));
      if (i % 2 === 0) await page.getByLabel("published").check();
      if (i === 1) {
        const parent = page.getByRole("combobox", { name: "parent" });
        await parent.fill("Alp");
        await page.getByRole("option", { name: /Alpha/ }).waitFor();
        await parent.press("ArrowDown");
        await parent.press("Enter");
        await page.getByText("Selected:").getByRole("link", { name: "Alpha" })
          .waitFor();
      }
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByRole("heading", { name: "Edit record" }).waitFor();
    }
    const betaId = (await call(
      s,
      "GET",
      `/entities/articles?filter=${encodeURIComponent('title == "Beta"')}`,
      token,
    )).data.items[0].id;

    // Edit one (from its row), delete one (with confirmation).
    await page.getByRole("link", { name: "Back to articles" }).click();
    await page.getByRole("link", { name: `Open ${betaId}` }).click();
    await page.getByLabel("title").fill("Beta edited");
    await page.getByLabel("views").fill("25");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Record saved").waitFor();
    const beta = (await call(s, "GET", `/entities/articles/${betaId}`, token))
      .data;
    assert.equal(beta.title, "Beta edited");
    assert.equal(beta.views, 25);
    assert.equal(beta.parent, alphaId);
    await page.getByRole("link", { name: "Back to articles" }).click();
    await page.getByRole("cell", { name: "Mu", exact: true }).click();
    await page.getByRole("button", { name: "Delete record" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" })
      .click();
    await page.waitForURL(/\/mb\/entities\/articles$/);
    await page.getByText("Record deleted").waitFor();
    const all = await call(s, "GET", "/entities/articles?count=true", token);
    assert.equal(all.data.total, 11);
    assert.ok(!all.data.items.some((r: { title: string }) => r.title === "Mu"));

    // ── 5. The table: sort, filter (Enter), quick search, pages, count. ──
    const views = page.getByRole("columnheader", { name: /views/ });
    await views.getByRole("button").click();
    await page.waitForURL(/sort=views/);
    assert.equal(await views.getAttribute("aria-sort"), "ascending");
    await poll(
      "ascending views",
      async () =>
        (await column(page, "views")).slice(0, 3).join() === "10,25,30",
    );
    await views.getByRole("button").click();
    await page.waitForURL(/sort=-views/);
    await poll(
      "descending views",
      async () => (await column(page, "views"))[0] === "110",
    );
    const filter = page.getByLabel("Filter");
    await filter.fill("views >= 50 && published == true");
    await filter.press("Enter");
    await page.waitForURL(/filter=/);
    await page.getByText("Page 1 · 4 records").waitFor(); // 50, 70, 90, 110
    await filter.fill("");
    const search = page.getByLabel("Search records");
    await search.fill("Gamm"); // case-sensitive (see the report)
    await search.press("Enter");
    await page.getByText("Page 1 · 1 record", { exact: true }).waitFor();
    await page.getByRole("cell", { name: "Gamma", exact: true }).waitFor();
    await search.fill("");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByLabel("Per page").selectOption("10");
    await page.waitForURL(/size=10/);
    await page.getByText("Page 1 · 10 records").waitFor();
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByText("Page 2 · 1 record", { exact: true }).waitFor();
    assert.deepEqual(await column(page, "views"), ["10"]); // still sorted
    assert.ok(await page.getByRole("button", { name: "Next →" }).isDisabled());
    await page.getByRole("button", { name: "← Previous" }).click();
    await page.getByText("Page 1 · 10 records").waitFor();
    await page.getByRole("button", { name: "Count" }).click();
    await page.getByText("11 in total").waitFor();
    // Sort off (the default: newest first), all on one page, fewer
    // columns: Alpha, the oldest, comes last with its image and files.
    await views.getByRole("button").click();
    await page.waitForURL((u) => !u.search.includes("sort="));
    await page.getByLabel("Per page").selectOption("25");
    await page.waitForURL((u) => !u.search.includes("size="));
    await page.getByText("Page 1 · 11 records").waitFor();
    await page.getByText("Columns", { exact: true }).click();
    for (const name of ["body", "contact", "site", "score", "when"]) {
      await page.getByRole("checkbox", { name, exact: true }).uncheck();
    }
    await page.getByText("Columns", { exact: true }).click();
    const lastRow = page.locator(".records-table tbody tr").last();
    await lastRow.getByRole("cell", { name: "Alpha", exact: true }).waitFor();
    assert.ok(await imageLoads(lastRow.locator("img.thumb")), "thumbnail");
    await tour(page, "tour_04_records");

    // ── 6. "Test as" a guest: the published records pass the list rule. ──
    await page.getByRole("link", { name: "Rules", exact: true }).click();
    await page.getByLabel("Caller").selectOption({ label: "Guest (no login)" });
    await page.getByRole("button", { name: "Run test" }).click();
    await page.getByText("6 of 11").waitFor();
    const trial = page.locator(".trial-table");
    assert.equal(await trial.getByText("✓ Allowed").count(), 6);
    assert.equal(await trial.getByText("✗ Denied").count(), 5);
    await trial.getByRole("row", { name: /Alpha.*Allowed/ }).waitFor();
    const guest = await call(s, "GET", "/entities/articles");
    assert.equal(guest.status, 200, guest.text);
    assert.equal(guest.data.items.length, 6);
    assert.ok(
      guest.data.items.every((r: { published: boolean }) => r.published),
    );
    await tour(page, "tour_03_rules");

    // ── 7. Files: the image and the two attachments of Alpha. ──
    await page.getByRole("link", { name: "Files", exact: true }).click();
    const fileRows = page.locator(".files-table tbody tr");
    await fileRows.nth(2).waitFor();
    assert.equal(await fileRows.count(), 3);
    const moon = fileRows.filter({ hasText: "moon.png" });
    assert.ok(await imageLoads(moon.locator("img.thumb")), "thumbnail");
    const download = fileRows.filter({ hasText: "notes.txt" })
      .getByRole("link", { name: "Download notes.txt" });
    const got = await fetch(`${s.url}${await download.getAttribute("href")}`);
    assert.equal(await got.text(), "first file");
    await tour(page, "tour_06_files");

    // ── 8. Logs: the refused create (400) found by level and search. ──
    await nav(page, "Logs");
    await page.getByRole("heading", { name: "Logs", exact: true }).waitFor();
    await page.getByLabel(/^Level/).selectOption("warn");
    await page.getByLabel(/^Search logs/).fill("entities/articles");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/level=warn/);
    const logRows = page.locator("table.log-table tbody tr");
    // The filtered page replaces the unfiltered one when it arrives: wait
    // for the refused create, then for no other level to remain.
    await logRows.filter({ hasText: /POST.*\/api\/v1\/entities\/articles/ })
      .first().waitFor();
    // (By their inner text: in textContent the cells run together, and
    // "…01warnPOST…" has no word boundary around the level.)
    await poll(
      "only warn rows",
      async () =>
        (await logRows.allInnerTexts()).every((t) => /\bwarn\b/.test(t)),
      { deadline: 15_000 },
    ).catch(() => {/* the assertion below says which rows */});
    const logs = await logRows.allInnerTexts();
    assert.ok(logs.every((t) => /\bwarn\b/.test(t)), logs.join("\n"));
    assert.ok(
      logs.some((t) => /POST.*\/api\/v1\/entities\/articles.*400/s.test(t)),
    );
    await tour(page, "tour_07_logs");

    // ── 9. Admins: a second one created, re-passworded, deleted. ──
    await nav(page, "Admins");
    await page.getByRole("heading", { name: "Admins" }).waitFor();
    await page.getByLabel(/^Email/).fill("second@example.com");
    await page.getByLabel(/^Password/).fill("second-password-1");
    await page.getByRole("button", { name: "Create admin" }).click();
    await page.getByText("Admin second@example.com created").waitFor();
    await page.getByRole("button", {
      name: "Change password of second@example.com",
    }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel(/^New password/).fill("second-password-2");
    await dialog.getByLabel("Repeat the new password").fill(
      "second-password-2",
    );
    await dialog.getByRole("button", { name: "Change password" }).click();
    await page.getByText(/Password of second@example.com changed/).waitFor();
    const second = await call(s, "POST", "/sys/admins/login", undefined, {
      identity: "second@example.com",
      password: "second-password-2",
    });
    assert.equal(second.status, 200, second.text);
    await tour(page, "tour_08_admins");
    await page.getByRole("button", { name: "Delete second@example.com" })
      .click();
    await dialog.getByRole("button", { name: "Delete admin" }).click();
    await page.getByText("Admin second@example.com deleted").waitFor();
    const admins = (await call(s, "GET", "/sys/admins", token)).data;
    assert.deepEqual(
      admins.items.map((a: { email: string }) => a.email),
      [EMAIL],
    );

    // ── 10. About, then log out. ──
    await nav(page, "Health & about");
    await page.getByRole("heading", { name: "Health & about" }).waitFor();
    await page.getByText(s.db === "sqlite" ? "SQLite" : "PostgreSQL").waitFor();
    await tour(page, "tour_09_about");
    const session = await page.evaluate(() =>
      (globalThis as unknown as {
        localStorage: { getItem(k: string): string | null };
      }).localStorage.getItem("mb_admin_session")
    );
    const pageToken = JSON.parse(session!).token as string;
    // The form shows at once; the revocation request may still be in flight.
    const revoked = page.waitForResponse((r) =>
      r.url().endsWith("/api/v1/sys/admins/logout")
    );
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Admin login" }).waitFor();
    assert.equal((await revoked).status(), 200);
    const after = await call(s, "GET", "/schemas", pageToken);
    assert.equal(after.status, 401, "logging out revoked the token");

    // ── 11. The same pages at 390 px, logged in through the form. ──
    await narrow.goto(`${s.url}/mb/login`);
    await login(narrow);
    const n = narrow;
    await nav(n, /^articles base/);
    await n.getByRole("link", { name: "Schema", exact: true }).click();
    await n.locator("fieldset.field-panel").nth(12).waitFor();
    await tour(n, "tour_02_entity_form");
    await n.getByRole("link", { name: "Rules", exact: true }).click();
    await n.getByRole("button", { name: "Run test" }).click();
    await n.getByText("6 of 11").waitFor();
    await tour(n, "tour_03_rules");
    await n.getByRole("link", { name: "Records", exact: true }).click();
    await n.locator(".records-table tbody tr").nth(10).waitFor();
    assert.ok(
      await n.locator(".records-table").evaluate((el) => {
        const e = el as { scrollWidth: number; clientWidth: number };
        return e.scrollWidth > e.clientWidth;
      }),
      "the table scrolls inside itself",
    );
    await tour(n, "tour_04_records");
    await n.getByRole("link", { name: `Open ${alphaId}` }).click();
    await n.getByLabel("title").waitFor();
    assert.ok(await imageLoads(n.locator(".file-list img.thumb").first()));
    await tour(n, "tour_05_record_editor");
    await n.getByRole("link", { name: "Files", exact: true }).click();
    await n.locator(".files-table tbody tr").nth(2).waitFor();
    await tour(n, "tour_06_files");
    await nav(n, "Logs");
    await n.locator("table.log-table tbody tr").first().waitFor();
    await tour(n, "tour_07_logs");
    await nav(n, "Admins");
    await n.getByText("you", { exact: true }).waitFor();
    await tour(n, "tour_08_admins");
    await nav(n, "Health & about");
    await n.getByText(s.db === "sqlite" ? "SQLite" : "PostgreSQL").waitFor();
    await tour(n, "tour_09_about");
    await n.getByRole("button", { name: "Log out" }).click();
    await n.getByRole("heading", { name: "Admin login" }).waitFor();
    assert.deepEqual(errors, []);
  },
);
