/**
 * The records table and the record editor in Chromium (issue 14 item 4):
 * every input type with uploads, order and removal, the relation picker,
 * per-field errors, delete; sort, filter (Enter, errors), quick search,
 * keyset paging with page size and count, column picker, bulk delete;
 * axe and screenshots at 1280 and 390 px. Files page: browser_files_test.ts.
 *
 * One server and one login for the three parts: each part makes its own
 * entities and the next starts once they are deleted (so each sees the
 * server as it would alone, screenshots included).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  axeSerious,
  type BrowserCase,
  browserTest,
  scrollWidth,
  shot,
} from "./_browser.ts";
import { dropEntities, sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import {
  imageLoads,
  makePng,
  seedPosts,
  setupBlog,
  textFile,
} from "./_records_fixtures.ts";
import { poll } from "./_wait.ts";

/** An attachment name long enough to push its row past a phone's width. */
const LONG_NAME = "c-rather-long-attachment-name-from-a-scanner-2024-05-01.txt";

async function editorFor(page: Page, s: TestServer, id = "new") {
  await page.goto(`${s.url}/mb/entities/posts/records/${id}`);
  await page.getByLabel("title").waitFor();
}

/** records: create, edit and delete a record with every input type and files */
async function editorSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const token = await setupBlog(s);
  const grace = await s.request("POST", "/api/v1/entities/authors", {
    token,
    body: { name: "Grace Hopper" },
  });
  await s.request("POST", "/api/v1/entities/authors", {
    token,
    body: { name: "Ada Lovelace" },
  });
  const page = await adminPage(1280);
  await editorFor(page, s);
  await page.getByLabel("title").fill("Hello editor");
  await page.getByLabel("body").fill("A long body\nover two lines");
  await page.getByLabel("views").fill("42");
  await page.getByLabel("score").fill("2.5");
  await page.getByLabel("published").check();
  await page.getByLabel("when").fill("2024-05-01T12:30");
  await page.getByLabel("meta").fill("{ bad");
  await page.getByText(/Not valid JSON/).waitFor();
  await page.getByLabel("meta").fill('{"tags": ["a", "b"], "n": 1}');
  assert.equal(await page.getByText(/Not valid JSON/).count(), 0);
  await page.getByLabel("status").selectOption("published");
  // Relation picker: type, arrows, Enter.
  const author = page.getByRole("combobox", { name: "author" });
  await author.fill("Grac");
  await page.getByRole("option", { name: /Grace Hopper/ }).waitFor();
  await author.press("ArrowDown");
  await author.press("ArrowUp");
  await author.press("Enter");
  await page.getByText("Selected:").getByRole("link", {
    name: "Grace Hopper",
  })
    .waitFor();
  // Uploads: a cover image (previewed) and two attachments, in order.
  await page.getByLabel("cover", { exact: true }).setInputFiles({
    name: "cover.png",
    mimeType: "image/png",
    buffer: await makePng(),
  });
  const preview = page.locator(".new-file img.thumb");
  await preview.waitFor();
  assert.match(await preview.getAttribute("src") ?? "", /^blob:/);
  await page.getByLabel("attachments", { exact: true }).setInputFiles([
    textFile("a.txt", "first"),
    textFile("b.txt", "second"),
  ]);
  assert.deepEqual(await axeSerious(page), []);
  await shot(page, "record_editor");
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
  await page.getByText("Record created").waitFor();
  const id = page.url().split("/").pop()!;
  let r = (await s.request("GET", `/api/v1/entities/posts/${id}`, { token }))
    .data;
  const whenIso = await page.evaluate(() =>
    new Date("2024-05-01T12:30:00").toISOString()
  );
  assert.equal(r.title, "Hello editor");
  assert.equal(r.body, "A long body\nover two lines");
  assert.equal(r.views, 42);
  assert.equal(r.score, 2.5);
  assert.equal(r.published, true);
  assert.equal(r.when, whenIso);
  assert.deepEqual(r.meta, { tags: ["a", "b"], n: 1 });
  assert.equal(r.status, "published");
  assert.equal(r.author, grace.data.id);
  assert.match(r.cover, /^cover_\w+\.png$/);
  assert.equal(r.attachments.length, 2);
  assert.match(r.attachments[0], /^a_/);
  assert.match(r.attachments[1], /^b_/);
  // The stored cover shows as a protected thumbnail (file token) that loads.
  const thumb = page.locator(".file-list img.thumb").first();
  await thumb.waitFor();
  assert.match(await thumb.getAttribute("src") ?? "", /\?token=/);
  assert.ok(await imageLoads(thumb), "the thumbnail loads");
  // The date input shows the stored time in local time.
  assert.match(
    await page.getByLabel("when").inputValue(),
    /^2024-05-01T12:30(:00)?$/,
  );

  // Its row in the table: every cell rendered by its type.
  await page.getByRole("link", { name: "Back to posts" }).click();
  const row = page.locator(".records-table tbody tr").first();
  await row.locator("img.thumb").waitFor();
  const heads = await page.locator(".records-table thead th")
    .allTextContents();
  const cell = (name: string) =>
    row.locator("td").nth(heads.findIndex((h) => h.startsWith(name)));
  const when = cell("when").locator("time");
  assert.equal(await when.getAttribute("datetime"), whenIso);
  assert.match(await when.innerText(), /2024/);
  assert.doesNotMatch(await when.innerText(), /T12|Z$/, "a local date");
  assert.equal(await cell("meta").innerText(), "{…} 2 keys");
  assert.equal(
    await cell("meta").locator("[title]").getAttribute("title"),
    JSON.stringify(r.meta),
  );
  assert.equal(await cell("published").textContent(), "✓yes");
  assert.equal(
    await cell("body").locator(".trunc").getAttribute("title"),
    "A long body\nover two lines",
  );
  assert.equal(
    await cell("author").getByRole("link", { name: "Grace Hopper" })
      .getAttribute("href"),
    `/mb/entities/authors/records/${grace.data.id}`,
  );
  assert.ok(await imageLoads(cell("cover").locator("img.thumb")));
  assert.match(
    await cell("attachments").getByRole("link", { name: "b.txt" })
      .getAttribute("href") ?? "",
    /\/api\/v1\/files\/posts\/b_\w+\.txt\?token=/,
  );
  await row.getByRole("link", { name: `Open ${id}` }).click();
  await page.getByLabel("title").waitFor();

  // Reorder: b before a, then a third file goes after them.
  await page.getByRole("button", { name: "Move b.txt up" }).click();
  await page.getByLabel("attachments", { exact: true }).setInputFiles(
    textFile(LONG_NAME, "third"),
  );
  await page.getByLabel("views").fill("43");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Record saved").waitFor();
  r = (await s.request("GET", `/api/v1/entities/posts/${id}`, { token })).data;
  assert.deepEqual(
    r.attachments.map((n: string) => n[0]),
    ["b", "a", "c"],
    "order kept",
  );
  assert.equal(r.views, 43);
  assert.equal(r.title, "Hello editor");
  // A long file name does not widen the editor at 390 px.
  const narrow = await adminPage(390);
  await editorFor(narrow, s, id);
  await narrow.locator(".file-list li", { hasText: "c-rather" }).waitFor();
  assert.equal(await scrollWidth(narrow), 390);
  await narrow.close();

  // Removal: a from the list, the cover altogether.
  await page.getByRole("button", { name: "Remove a.txt" }).click();
  await page.getByRole("button", { name: "Remove cover.png" }).click();
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator(".file-list li").nth(2).waitFor({ state: "detached" });
  await page.getByRole("button", { name: "Save" }).isEnabled();
  r = (await s.request("GET", `/api/v1/entities/posts/${id}`, { token })).data;
  assert.deepEqual(r.attachments.map((n: string) => n[0]), ["b", "c"]);
  assert.equal(r.cover, null);

  // A per-field error from the API shows next to its field.
  await page.getByLabel("title").fill("");
  await page.getByRole("button", { name: "Save" }).click();
  const titleError = page.locator("#field-title-error");
  await titleError.waitFor();
  assert.ok((await titleError.textContent())!.length > 0);
  await page.getByLabel("title").fill("Hello again");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Record saved").first().waitFor();

  // Delete with confirmation.
  await page.getByRole("button", { name: "Delete record" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" })
    .click();
  await page.waitForURL(/\/mb\/entities\/posts$/);
  const gone = await s.request("GET", `/api/v1/entities/posts/${id}`, {
    token,
  });
  assert.equal(gone.status, 404);

  // Unknown record → not found.
  await page.goto(`${s.url}/mb/entities/posts/records/nope`);
  await page.getByRole("heading", { name: "Not found" }).waitFor();
  assert.deepEqual(errors, []);
}

/** The text of the `views` cells, top to bottom. */
async function viewsColumn(page: Page): Promise<string[]> {
  const headers = await page.locator(".records-table thead th")
    .allTextContents();
  const col = headers.findIndex((h) => h.startsWith("views")) + 1;
  return await page.locator(`.records-table tbody td:nth-child(${col})`)
    .allTextContents();
}

/** Waits until the `views` column starts with `want`. */
async function viewsStart(page: Page, want: string[]): Promise<void> {
  await poll(`views ${want.join()}`, async () => {
    const got = (await viewsColumn(page)).slice(0, want.length);
    return JSON.stringify(got) === JSON.stringify(want);
  }).catch(() => {/* the assertion below says what differs */});
  assert.deepEqual((await viewsColumn(page)).slice(0, want.length), want);
}

/** records: sort, filter, search, pages, count, columns and bulk delete */
async function tableSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const token = await setupBlog(s);
  await seedPosts(s, 30);
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/posts`);
  const rows = page.locator(".records-table tbody tr");
  await rows.nth(24).waitFor();
  assert.equal(await rows.count(), 25);
  // Page size, next / previous, count.
  await page.getByLabel("Per page").selectOption("10");
  await page.waitForURL(/size=10/);
  await page.getByText("Page 1 · 10 records").waitFor();
  const first = await page.locator(".records-table tbody tr").first()
    .textContent();
  await page.getByRole("button", { name: "Next →" }).click();
  await page.getByText("Page 2 · 10 records").waitFor();
  assert.notEqual(await rows.first().textContent(), first);
  await page.getByRole("button", { name: "Next →" }).click();
  await page.getByText("Page 3 · 10 records").waitFor();
  assert.ok(
    await page.getByRole("button", { name: "Next →" }).isDisabled(),
    "no page 4",
  );
  await page.getByRole("button", { name: "← Previous" }).click();
  await page.getByRole("button", { name: "← Previous" }).click();
  await page.getByText("Page 1 · 10 records").waitFor();
  assert.equal(await rows.first().textContent(), first);
  await page.getByRole("button", { name: "Count" }).click();
  await page.getByText("30 in total").waitFor();

  // Sort by header: asc → desc → off, with aria-sort.
  const views = page.getByRole("columnheader", { name: /views/ });
  await views.getByRole("button").click();
  await page.waitForURL(/sort=views/);
  assert.equal(await views.getAttribute("aria-sort"), "ascending");
  await viewsStart(page, ["1", "2", "3"]);
  await views.getByRole("button").click();
  await page.waitForURL(/sort=-views/);
  assert.equal(await views.getAttribute("aria-sort"), "descending");
  await viewsStart(page, ["30", "29"]);
  await views.getByRole("button").click();
  await page.waitForURL((u) => !u.search.includes("sort="));
  assert.equal(await views.getAttribute("aria-sort"), null);

  // Filter with Enter; the URL keeps it over a reload.
  const filter = page.getByLabel("Filter");
  await filter.fill("views >= 25");
  await filter.press("Enter");
  await page.waitForURL(/filter=/);
  await page.getByText("Page 1 · 6 records").waitFor();
  await page.reload();
  await page.getByText("Page 1 · 6 records").waitFor();
  assert.equal(await page.getByLabel("Filter").inputValue(), "views >= 25");
  // A bad filter: the error in words, its place highlighted.
  await filter.fill("views >= ");
  await filter.press("Enter");
  const alert = page.locator("#filter-error");
  await alert.waitFor();
  assert.match(
    (await alert.locator("p").textContent())!,
    /^Cannot .* — at the end$/,
  );
  assert.equal(await page.locator(".filter-echo mark").count(), 1);
  // No "Page 1 · 0 records" under an error: the pager waits.
  assert.equal(await page.getByLabel("Per page").count(), 0);
  await filter.fill("nosuchfield == 1");
  await filter.press("Enter");
  await page.getByText(/nosuchfield/).first().waitFor();
  await filter.fill("");

  // Quick search over the text fields, combined with the filter.
  await page.getByLabel("Search records").fill("Post 07");
  await page.getByLabel("Search records").press("Enter");
  await page.getByText("Page 1 · 1 record", { exact: true }).waitFor();
  await page.getByRole("cell", { name: "Post 07" }).waitFor();
  await filter.fill("views > 7");
  await filter.press("Enter");
  await page.getByText("No records match.").waitFor();
  await filter.fill('body.includes("even")');
  await page.getByLabel("Search records").fill('Post 1"');
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByText("No records match.").waitFor();
  await page.getByLabel("Search records").fill("Post 1");
  await page.getByRole("button", { name: "Apply" }).click();
  // Post 10, 12, 14, 16, 18 have even bodies.
  await page.getByText("Page 1 · 5 records").waitFor();
  await filter.fill("");
  // Any case, any accents.
  await page.getByLabel("Search records").fill("pÓST 07");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByText("Page 1 · 1 record", { exact: true }).waitFor();
  await page.getByLabel("Search records").fill("");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByText("Page 1 · 10 records").waitFor();

  // Searchable fields: the box is the API's full-text search (every word,
  // the last one a prefix), best match first.
  const fields = (await s.request("GET", "/api/v1/schemas/posts", { token }))
    .data.fields;
  const patch = await s.request("PATCH", "/api/v1/schemas/posts", {
    token,
    body: {
      fields: fields.filter((f: { name: string }) =>
        f.name === "title" || f.name === "body"
      ).map((f: { id: string; name: string; type: string }) => ({
        id: f.id,
        name: f.name,
        type: f.type,
        searchable: true,
      })),
    },
  });
  assert.equal(patch.status, 200, patch.text);
  await page.reload();
  const box = page.getByLabel("Search records");
  assert.equal(
    await box.getAttribute("placeholder"),
    "Words in the searchable fields",
  );
  await box.fill("EVEN post 2");
  await box.press("Enter");
  // Post 20, 22, 24, 26, 28.
  await page.getByText("Page 1 · 5 records").waitFor();
  assert.match(page.url(), /q=EVEN/);
  await box.fill("");
  await box.press("Enter");
  await page.getByText("Page 1 · 10 records").waitFor();

  // Column picker, kept over a reload.
  await page.getByText("Columns", { exact: true }).click();
  await page.getByRole("checkbox", { name: "body", exact: true }).uncheck();
  assert.equal(
    await page.getByRole("columnheader", { name: "body" }).count(),
    0,
  );
  await page.reload();
  await rows.first().waitFor();
  assert.equal(
    await page.getByRole("columnheader", { name: "body" }).count(),
    0,
  );
  assert.equal(
    await page.getByRole("columnheader", { name: /title/ }).count(),
    1,
  );

  // The table at both widths: axe, screenshots, no page overflow at 390.
  assert.deepEqual(await axeSerious(page), []);
  await shot(page, "records");
  const narrow = await adminPage(390);
  await narrow.goto(`${s.url}/mb/entities/posts?size=10`);
  await narrow.locator(".records-table tbody tr").nth(9).waitFor();
  assert.equal(await scrollWidth(narrow), 390);
  const wrap = narrow.locator(".records-table");
  assert.ok(
    await wrap.evaluate((el) => {
      const e = el as { scrollWidth: number; clientWidth: number };
      return e.scrollWidth > e.clientWidth;
    }),
    "the table scrolls inside itself",
  );
  assert.deepEqual(await axeSerious(narrow), []);
  await shot(narrow, "records");
  await narrow.goto(`${s.url}/mb/entities/posts/records/new`);
  await narrow.getByLabel("title").waitFor();
  assert.equal(await scrollWidth(narrow), 390);
  assert.deepEqual(await axeSerious(narrow), []);
  await shot(narrow, "record_editor");

  // Row click and Enter on the row's link open the editor.
  await rows.nth(1).locator("td").nth(3).click();
  await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
  await page.goBack();
  await rows.first().getByRole("link").first().focus();
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
  await page.goBack();

  // Bulk delete: two rows, one confirmation, a toast with the count.
  await rows.first().waitFor();
  await rows.nth(0).getByRole("checkbox").check();
  await rows.nth(1).getByRole("checkbox").check();
  await page.getByRole("button", { name: "Delete selected (2)" }).click();
  await page.getByRole("dialog").getByText("Delete 2 records of posts?")
    .waitFor();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" })
    .click();
  await page.getByText("Deleted 2 records").waitFor();
  const left = await s.request(
    "GET",
    "/api/v1/entities/posts?count=true&limit=1",
    { token },
  );
  assert.equal(left.data.total, 28);
  // Select all on the page.
  await page.getByRole("checkbox", { name: "Select all on this page" })
    .check();
  await page.getByRole("button", { name: "Delete selected (10)" })
    .waitFor();
  assert.deepEqual(errors, []);
}

/** records: auth entities take email, password (confirmed) and verified */
async function authSteps({ s, adminPage, errors }: BrowserCase): Promise<void> {
  const token = await s.adminToken();
  const made = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "members",
      type: "auth",
      fields: [{ name: "nick", type: "string" }],
    },
  });
  assert.equal(made.status, 201, made.text);
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/members/records/new`);
  await page.getByLabel("email").fill("kim@example.com");
  await page.getByLabel("nick").fill("kim");
  await page.getByRole("textbox", { name: "password", exact: true }).fill(
    "kim-password-1",
  );
  await page.getByLabel("confirm password").fill("kim-password-2");
  await page.getByRole("button", { name: "Create" }).click();
  await page.getByText("The two passwords differ").waitFor();
  await page.getByLabel("confirm password").fill("kim-password-1");
  await page.getByLabel("verified").check();
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
  const id = page.url().split("/").pop()!;
  const r = (await s.request("GET", `/api/v1/entities/members/${id}`, {
    token,
  })).data;
  assert.equal(r.email, "kim@example.com");
  assert.equal(r.verified, true);
  assert.equal(r.password, undefined);
  const login = await s.request("POST", "/api/v1/auth/members/login", {
    body: { identity: "kim@example.com", password: "kim-password-1" },
  });
  assert.equal(login.status, 200);
  // A new password is sent only when filled; an empty one keeps it.
  await page.getByLabel("nick").fill("kimmy");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Record saved").waitFor();
  const again = await s.request("POST", "/api/v1/auth/members/login", {
    body: { identity: "kim@example.com", password: "kim-password-1" },
  });
  assert.equal(again.status, 200);
  assert.deepEqual(await axeSerious(page), []);

  // A relation whose default is the caller ("@auth"): the new record's
  // form leaves it empty and says who fills it; an admin's record has none.
  const memos = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "memos",
      type: "base",
      fields: [
        { name: "text", type: "string" },
        {
          name: "owner",
          type: "relation",
          foreign_key: { entity: "members" },
          default: "@auth",
        },
      ],
    },
  });
  assert.equal(memos.status, 201, memos.text);
  await page.goto(`${s.url}/mb/entities/memos/records/new`);
  await page.getByLabel("text").fill("a memo");
  await page.getByText(
    "Left empty on a new record, it becomes the members user who creates it",
  ).waitFor();
  assert.equal(await page.getByText("Selected:").count(), 0);
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForURL(/\/records\/[0-9a-f-]{36}$/);
  const memo = (await s.request(
    "GET",
    `/api/v1/entities/memos/${page.url().split("/").pop()}`,
    { token },
  )).data;
  assert.equal(memo.text, "a memo");
  assert.equal(memo.owner, null);
  assert.deepEqual(errors, []);
}

browserTest(
  "records: the editor with every input type and files; the table; auth entities",
  async (c) => {
    const parts = { ...c, adminPage: sharedLogin(c) };
    await editorSteps(parts);
    await dropEntities(c.s, "posts", "authors");
    await tableSteps(parts);
    await dropEntities(c.s, "posts", "authors");
    await authSteps(parts);
  },
);
