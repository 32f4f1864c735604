/**
 * The files page and protected file URLs in Chromium (issue 14 item 5):
 * thumbnails, name, size and type, the owning record, download, delete
 * through the record; file tokens where the `get` rule is not public.
 *
 * One server and one login for both parts (the first part's entities are
 * deleted before the second).
 */
import assert from "node:assert/strict";
import {
  axeSerious,
  type BrowserCase,
  browserTest,
  scrollWidth,
  shot,
} from "./_browser.ts";
import { dropEntities, sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import { imageLoads, makePng, setupBlog } from "./_records_fixtures.ts";

/** Creates a record with uploads through the API (multipart). */
async function upload(
  s: TestServer,
  entity: string,
  fields: Record<string, string>,
  files: [string, string, Uint8Array, string][],
): Promise<Record<string, unknown>> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const [field, name, bytes, type] of files) {
    form.append(field, new Blob([new Uint8Array(bytes)], { type }), name);
  }
  const res = await fetch(`${s.url}/api/v1/entities/${entity}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${await s.adminToken()}` },
  });
  const body = await res.json();
  if (res.status !== 201) {
    throw new Error(`upload: ${res.status} ${body.error}`);
  }
  return body.data;
}

const text = (t: string) => new TextEncoder().encode(t);

/** files: a page of files with thumbnails, size, type, record; delete through the record */
async function protectedSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const token = await setupBlog(s);
  const png = await makePng(32, [211, 91, 47]);
  const rec = await upload(s, "posts", { title: "With files" }, [
    ["cover", "photo.png", png, "image/png"],
    ["attachments", "a.txt", text("first file"), "text/plain"],
    ["attachments", "b.txt", text("second"), "text/plain"],
  ]);
  await upload(s, "posts", { title: "No files" }, []);

  // Protected entity (get rule admin-only): URLs carry a file token.
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/posts`);
  const thumb = page.locator(".records-table img.thumb");
  await thumb.waitFor();
  assert.match(await thumb.getAttribute("src") ?? "", /\?token=[\w.-]+/);
  assert.ok(await imageLoads(thumb), "the table's thumbnail loads");

  await page.getByRole("link", { name: "Files" }).click();
  await page.waitForURL(/\/files$/);
  const rows = page.locator(".files-table tbody tr");
  await rows.nth(2).waitFor();
  assert.equal(await rows.count(), 3);
  const cover = rows.filter({ hasText: "photo.png" });
  assert.ok(await imageLoads(cover.locator("img.thumb")));
  // (Exact: below 620 px a line under the name repeats them.)
  await cover.getByText(`${png.length} B`, { exact: true }).waitFor();
  await cover.getByText("image/png", { exact: true }).waitFor();
  const a = rows.filter({ hasText: "a.txt" });
  await a.getByText("10 B", { exact: true }).waitFor();
  await a.getByText("text/plain; charset=utf-8", { exact: true }).waitFor();
  assert.equal(
    await a.getByRole("link", { name: /…/ }).getAttribute("href"),
    `/mb/entities/posts/records/${rec.id}`,
  );
  const download = a.getByRole("link", { name: "Download a.txt" });
  const href = await download.getAttribute("href");
  assert.match(href ?? "", /\/api\/v1\/files\/posts\/a_\w+\.txt\?token=/);
  const got = await fetch(`${s.url}${href}`);
  assert.equal(await got.text(), "first file");

  assert.deepEqual(await axeSerious(page), []);
  await shot(page, "files");
  const narrow = await adminPage(390);
  await narrow.goto(`${s.url}/mb/entities/posts/files`);
  await narrow.locator(".files-table tbody tr").nth(2).waitFor();
  await narrow.locator(".file-facts").getByText(/image\/png/).waitFor();
  assert.equal(await scrollWidth(narrow), 390);
  assert.deepEqual(await axeSerious(narrow), []);
  await shot(narrow, "files");

  // Delete through the record, with confirmation.
  await a.getByRole("button", { name: "Delete a.txt" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" })
    .click();
  await page.getByText("Deleted a.txt").waitFor();
  await a.waitFor({ state: "detached" });
  assert.equal(await rows.count(), 2);
  await cover.getByRole("button", { name: "Delete photo.png" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete" })
    .click();
  await page.getByText("Deleted photo.png").waitFor();
  const r = (await s.request("GET", `/api/v1/entities/posts/${rec.id}`, {
    token,
  })).data;
  assert.equal(r.cover, null);
  assert.equal(r.attachments.length, 1);
  assert.match(r.attachments[0], /^b_/);
  // An entity without file fields says so (no empty table, no pager).
  await page.goto(`${s.url}/mb/entities/authors/files`);
  await page.getByText("This entity has no file fields").waitFor();
  assert.equal(await page.locator(".files-table").count(), 0);
  assert.equal(await page.getByLabel("Per page").count(), 0);
  assert.deepEqual(errors, []);
}

/** files: an entity whose get rule is public needs no token */
async function publicSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const token = await s.adminToken();
  const made = await s.request("POST", "/api/v1/schemas", {
    token,
    body: {
      name: "pics",
      type: "base",
      fields: [{ name: "image", type: "file", mime_types: ["image/*"] }],
      rules: {
        list: { mode: "public", expr: "" },
        get: { mode: "public", expr: "" },
      },
    },
  });
  assert.equal(made.status, 201, made.text);
  await upload(s, "pics", {}, [[
    "image",
    "sky.png",
    await makePng(),
    "image/png",
  ]]);
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/pics`);
  const thumb = page.locator(".records-table img.thumb");
  await thumb.waitFor();
  assert.doesNotMatch(await thumb.getAttribute("src") ?? "", /token=/);
  assert.ok(await imageLoads(thumb));
  assert.deepEqual(errors, []);
}

browserTest(
  "files: the files page, protected and public file URLs",
  async (c) => {
    const parts = { ...c, adminPage: sharedLogin(c) };
    await protectedSteps(parts);
    await dropEntities(c.s, "posts", "authors");
    await publicSteps(parts);
  },
);
