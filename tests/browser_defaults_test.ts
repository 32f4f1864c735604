/**
 * Dashboard defaults that hid data (issue 27 item 4), in Chromium on SQLite
 * and PostgreSQL, one server per database: records open newest first; the
 * live table says when new records arrived, also when they are on another
 * page; the filter placeholder uses the entity's own fields; the delete
 * dialogs name what a cascade deletes with the record (with counts); the
 * files tab pages by files, not records, and fits 390 px. Screenshots:
 * `defaults_records`, `defaults_cascade`, `defaults_files` (1280 and 390;
 * taken by the first database's run).
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

/** POSTs a JSON record and returns it (asserting 201). */
async function add(
  s: TestServer,
  token: string,
  entity: string,
  body: Record<string, unknown>,
): Promise<{ id: string }> {
  const r = await s.request("POST", `/api/v1/entities/${entity}`, {
    token,
    body,
  });
  assert.equal(r.status, 201, r.text);
  return r.data;
}

async function schema(s: TestServer, token: string, body: unknown) {
  const r = await s.request("POST", "/api/v1/schemas", { token, body });
  assert.equal(r.status, 201, r.text);
}

/** Creates a record with `files` uploads of `field` (multipart). */
async function upload(
  s: TestServer,
  token: string,
  entity: string,
  title: string,
  field: string,
  names: string[],
): Promise<void> {
  const form = new FormData();
  form.append("title", title);
  for (const n of names) {
    form.append(field, new Blob([`file ${n}`], { type: "text/plain" }), n);
  }
  const res = await fetch(`${s.url}/api/v1/entities/${entity}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  assert.equal(res.status, 201, text);
}

/** The first word of each row's text after the id (the title). */
async function titles(page: Page): Promise<string[]> {
  const cells = page.locator(".records-table tbody tr td:nth-child(3)");
  return (await cells.allTextContents()).map((t) => t.trim());
}

browserTestAllDbs(
  "defaults: newest first, live notices, own placeholder, cascade names, files pages",
  async ({ s, adminPage, errors }) => {
    const token = await s.adminToken();

    // ---- Records open newest first (as PocketBase's do).
    await schema(s, token, {
      name: "notes",
      type: "base",
      fields: [
        { name: "headline", type: "string" },
        { name: "n", type: "int" },
        { name: "done", type: "bool" },
      ],
    });
    for (let i = 1; i <= 30; i++) {
      await add(s, token, "notes", {
        headline: `n${String(i).padStart(2, "0")}`,
        n: i,
      });
    }
    const page = await adminPage(1280);
    await page.goto(`${s.url}/mb/entities/notes`);
    const rows = page.locator(".records-table tbody tr");
    await rows.nth(24).waitFor();
    assert.deepEqual((await titles(page)).slice(0, 3), ["n30", "n29", "n28"]);
    assert.equal(
      await page.getByRole("columnheader", { name: /^created/ })
        .getAttribute("aria-sort"),
      "descending",
    );
    // The default's own column goes ascending, then back to the default.
    const created = page.getByRole("columnheader", { name: /^created/ })
      .getByRole("button");
    await created.click();
    await page.waitForURL(/sort=created/);
    await page.locator(".records-table tbody tr", { hasText: "n01" }).first()
      .waitFor();
    assert.equal((await titles(page))[0], "n01");
    await created.click();
    await page.waitForURL((u) => !u.search.includes("sort="));
    await page.locator(".records-table tbody tr", { hasText: "n30" }).first()
      .waitFor();
    assert.equal((await titles(page))[0], "n30");

    // ---- The filter placeholder uses the entity's own fields.
    const placeholder = await page.getByLabel("Filter").getAttribute(
      "placeholder",
    ) ?? "";
    assert.match(placeholder, /\bn >= 10\b/);
    assert.match(placeholder, /\bheadline\b/);
    assert.doesNotMatch(placeholder, /\bviews\b/);

    // ---- Live: a new record on a full page 1 is announced, never silent.
    await page.getByRole("status", { name: "Live updates: connected" })
      .waitFor();
    await add(s, token, "notes", { headline: "fresh", n: 99 });
    const show = page.getByRole("button", { name: "Show 1 new record" });
    await show.waitFor();
    assert.equal(await rows.count(), 25, "the page did not move");
    if (s.db === SHOTS_DB) await shot(page, "defaults_records");
    assert.deepEqual(await axeSerious(page), []);
    await show.click();
    await page.locator(".records-table tbody tr", { hasText: "fresh" })
      .waitFor();
    assert.equal((await titles(page))[0], "fresh");
    // On page 2, a new record is on page 1: the notice says so and goes there.
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByText(/^Page 2 · /).waitFor();
    await add(s, token, "notes", { headline: "later", n: 100 });
    const onFirst = page.getByRole("button", {
      name: "Show 1 new record on page 1",
    });
    await onFirst.waitFor();
    await onFirst.click();
    await page.getByText(/^Page 1 · /).waitFor();
    await page.locator(".records-table tbody tr", { hasText: "later" })
      .waitFor();
    assert.equal((await titles(page))[0], "later");

    // ---- The delete dialogs name what a cascade deletes with the record.
    await schema(s, token, {
      name: "threads",
      type: "base",
      fields: [{ name: "title", type: "string" }],
    });
    await schema(s, token, {
      name: "replies",
      type: "base",
      fields: [
        { name: "body", type: "string" },
        {
          name: "thread",
          type: "relation",
          foreign_key: { entity: "threads", on_delete: "cascade" },
        },
      ],
    });
    await schema(s, token, {
      name: "votes",
      type: "base",
      fields: [{
        name: "reply",
        type: "relation",
        foreign_key: { entity: "replies", on_delete: "cascade" },
      }],
    });
    await schema(s, token, {
      name: "bookmarks",
      type: "base",
      fields: [{
        name: "thread",
        type: "relation",
        foreign_key: { entity: "threads", on_delete: "set null" },
      }],
    });
    const t1 = await add(s, token, "threads", { title: "First thread" });
    const t2 = await add(s, token, "threads", { title: "Second thread" });
    const r1 = await add(s, token, "replies", { body: "a", thread: t1.id });
    await add(s, token, "replies", { body: "b", thread: t1.id });
    await add(s, token, "replies", { body: "c", thread: t2.id });
    await add(s, token, "votes", { reply: r1.id });
    await add(s, token, "bookmarks", { thread: t1.id });
    await page.goto(`${s.url}/mb/entities/threads/records/${t1.id}`);
    await page.getByRole("button", { name: "Delete record" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Also deleted with it:").waitFor();
    await dialog.getByText(
      "2 records of replies whose thread points at it",
    ).waitFor();
    await dialog.getByText(/Records of votes that point at those/).waitFor();
    assert.equal(await dialog.getByText(/bookmarks/).count(), 0);
    assert.deepEqual(await axeSerious(page), []);
    if (s.db === SHOTS_DB) await shot(page, "defaults_cascade");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    // Bulk delete: the records of both threads are counted.
    await page.goto(`${s.url}/mb/entities/threads`);
    await page.getByRole("checkbox", { name: "Select all on this page" })
      .check();
    await page.getByRole("button", { name: "Delete selected (2)" }).click();
    await dialog.getByText(
      "3 records of replies whose thread points at them",
    ).waitFor();
    await dialog.getByRole("button", { name: "Delete" }).click();
    await page.getByText("Deleted 2 records").waitFor();
    const left = await s.request("GET", "/api/v1/entities/replies", { token });
    assert.equal(left.data.items.length, 0, "the cascade ran");
    // Nothing cascades from notes: no list in its dialog.
    await page.goto(`${s.url}/mb/entities/notes`);
    await rows.first().locator("a").first().click();
    await page.getByRole("button", { name: "Delete record" }).click();
    await dialog.getByText(/Delete this notes record\?/).waitFor();
    assert.equal(await dialog.getByText("Also deleted with it:").count(), 0);
    await dialog.getByRole("button", { name: "Cancel" }).click();

    // ---- The files tab pages by files, not records, and fits 390 px.
    await schema(s, token, {
      name: "docs",
      type: "base",
      fields: [
        { name: "title", type: "string" },
        { name: "cover", type: "file" },
        { name: "att", type: "files", max: 20 },
      ],
    });
    // The oldest record holds 12 files; 12 newer ones hold none.
    await upload(
      s,
      token,
      "docs",
      "big",
      "att",
      Array.from(
        { length: 12 },
        (_, i) => `scan-${String(i + 1).padStart(2, "0")}-of-a-long-name.txt`,
      ),
    );
    for (let i = 0; i < 12; i++) {
      await add(s, token, "docs", { title: `empty ${i}` });
    }
    await upload(s, token, "docs", "newest", "cover", ["cover.txt"]);
    await page.goto(`${s.url}/mb/entities/docs/files?size=10`);
    const fileRows = page.locator(".files-table tbody tr");
    await fileRows.nth(9).waitFor();
    assert.equal(await fileRows.count(), 10, "a page holds 10 files");
    assert.equal(
      await fileRows.first().locator(".file-original").textContent(),
      "cover.txt",
      "newest first",
    );
    await page.getByText(/^Page 1 · 10 files in 2 records/).waitFor();
    await page.getByRole("button", { name: "Next →" }).click();
    await page.getByText(/^Page 2 · 3 files in 1 record/).waitFor();
    assert.equal(await fileRows.count(), 3);
    assert.ok(
      await page.getByRole("button", { name: "Next →" }).isDisabled(),
      "no page of records without files follows",
    );
    await page.getByRole("button", { name: "← Previous" }).click();
    await page.getByText(/^Page 1 · 10 files/).waitFor();
    assert.deepEqual(await axeSerious(page), []);
    if (s.db === SHOTS_DB) await shot(page, "defaults_files");

    const narrow = await adminPage(390);
    await narrow.goto(`${s.url}/mb/entities/docs/files?size=10`);
    await narrow.locator(".files-table tbody tr").nth(9).waitFor();
    await narrow.locator(".files-table tbody tr .file-facts").first()
      .getByText(/text\/plain/).waitFor();
    assert.equal(await scrollWidth(narrow), 390, "the page fits 390 px");
    const wrap = await narrow.locator(".files-wrap").evaluate((el) => ({
      scroll: el.scrollWidth,
      client: el.clientWidth,
    }));
    assert.ok(
      wrap.scroll <= wrap.client,
      `the files table fits without scrolling sideways (${wrap.scroll} > ${wrap.client})`,
    );
    const actions = narrow.locator(".files-table tbody tr").first()
      .getByRole("button", { name: /^Delete / });
    const box = await actions.boundingBox();
    assert.ok(box && box.x + box.width <= 390, "the actions are on screen");
    assert.deepEqual(await axeSerious(narrow), []);
    if (s.db === SHOTS_DB) await shot(narrow, "defaults_files");
    assert.deepEqual(errors, []);
  },
);
