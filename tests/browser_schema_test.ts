/**
 * The entity form in Chromium: create an entity with every field type and
 * option; edit (rename keeps data, delete drops the column, add, a refused
 * pattern shown at its input); the JSON view round-trips; a view's SQL is
 * checked on save; deleting an entity (409 in plain words, then done).
 *
 * One server and one login for the four parts: each part makes its own
 * entities and the next starts once they are deleted (so each sees the
 * server as it would alone, screenshots included).
 */
import assert from "node:assert/strict";
import type { Locator, Page } from "playwright-core";
import {
  axeSerious,
  type BrowserCase,
  browserTest,
  scrollWidth,
  shot,
  WIDTHS,
} from "./_browser.ts";
import { dropEntities, sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";

async function api(
  s: TestServer,
  method: string,
  path: string,
  body?: unknown,
) {
  const r = await s.request(method, `/api/v1${path}`, {
    token: await s.adminToken(),
    body,
  });
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  return r.data;
}

/** The editor of field #n (1-based). */
const panel = (page: Page, n: number): Locator =>
  page.locator("fieldset.field-panel").nth(n - 1);

async function addField(
  page: Page,
  name: string,
  type: string,
): Promise<Locator> {
  await page.getByRole("button", { name: "+ Add field" }).click();
  const p = page.locator("fieldset.field-panel").last();
  await p.getByLabel("Name").fill(name);
  await p.getByLabel("Type").selectOption(type);
  return p;
}

async function addChip(p: Locator, item: string, value: string) {
  await p.getByLabel(`New ${item}`).fill(value);
  await p.getByRole("button", { name: `Add ${item}` }).click();
}

/** A screenshot from the top of the page (sticky bars where they belong). */
async function topShot(page: Page, name: string) {
  await page.evaluate("scrollTo(0, 0)");
  await shot(page, name);
}

async function checkPage(page: Page, errors: string[]) {
  assert.deepEqual(await axeSerious(page), []);
  assert.equal(await scrollWidth(page), page.viewportSize()?.width);
  assert.deepEqual(errors, []);
}

/** schema form: create an entity with every field type and option */
async function createSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  await api(s, "POST", "/schemas", {
    name: "users",
    type: "auth",
    fields: [],
  });
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/new`);
  await page.getByLabel("Entity name").fill("gadgets");
  await page.getByText("Access rules: admins only until").waitFor();

  let p = await addField(page, "title", "string");
  await p.getByLabel("Required").check();
  await p.getByLabel("Unique").check();
  await p.getByLabel("Min length").fill("2");
  await p.getByLabel("Max length").fill("80");
  await p.getByLabel("Pattern").fill("^[A-Z]");
  await p.getByLabel("Default").fill("Hello");
  p = await addField(page, "body", "text");
  await p.getByLabel("Max length").fill("5000");
  await p.getByLabel("Index").check();
  await p.getByLabel("Searchable").check();
  p = await addField(page, "contact", "email");
  assert.equal(await p.getByLabel("Pattern").count(), 0); // not for email
  assert.equal(await p.getByLabel("Searchable").count(), 0); // string, text
  await p.getByLabel("Default").fill("a@example.com");
  p = await addField(page, "site", "url");
  await p.getByLabel("Default").fill("https://example.com/");
  p = await addField(page, "qty", "int");
  await p.getByLabel("Min value").fill("0");
  await p.getByLabel("Max value").fill("100");
  await p.getByLabel("Default").fill("5");
  await p.getByLabel("Index").check();
  p = await addField(page, "price", "double");
  await p.getByLabel("Min value").fill("0.5");
  await p.getByLabel("Default").fill("1.25");
  p = await addField(page, "active", "bool");
  assert.equal(await p.getByLabel("Unique").count(), 0); // not for bool
  await p.getByLabel("Default").selectOption("true");
  p = await addField(page, "since", "date");
  await p.getByLabel("Default").fill("2024-05-06T07:08:09");
  p = await addField(page, "extra", "json");
  await p.getByLabel("Default").fill('{"a": [1]}');
  p = await addField(page, "status", "select");
  await addChip(p, "value", "draft");
  await addChip(p, "value", "live");
  await addChip(p, "value", "gone");
  await p.getByRole("button", { name: "Remove value gone" }).click();
  await p.getByLabel("Default").selectOption("draft");
  await p.getByLabel("Unique").check();
  p = await addField(page, "owner", "relation");
  assert.equal(await p.getByLabel("Default").count(), 0); // not for relations
  await p.getByLabel("Target entity").selectOption("users");
  await p.getByLabel("When the target is deleted").selectOption("cascade");
  p = await addField(page, "manual", "file");
  assert.equal(await p.getByLabel("Min files").count(), 0); // files only
  await addChip(p, "MIME type", "application/pdf");
  p = await addField(page, "photos", "files");
  await addChip(p, "MIME type", "image/png");
  await addChip(p, "MIME type", "image/jpeg");
  await p.getByLabel("Min files").fill("1");
  await p.getByLabel("Max files").fill("3");

  // A client-side problem is shown at its input, nothing is sent.
  await panel(page, 9).getByLabel("Default").fill("{oops");
  await page.getByRole("button", { name: "Create entity" }).click();
  await panel(page, 9).getByText("Invalid JSON at line 1, column 2")
    .waitFor();
  await panel(page, 9).getByLabel("Default").fill('{"a": [1]}');

  await checkPage(page, errors);
  await topShot(page, "schema_create");
  await page.getByRole("button", { name: "Create entity" }).click();
  await page.waitForURL(/\/mb\/entities\/gadgets$/);
  await page.getByText("Entity gadgets created").waitFor();

  const s1 = await api(s, "GET", "/schemas/gadgets");
  assert.deepEqual(s1.rules.list, { mode: "", expr: "" }); // admins only
  const own = Object.fromEntries(
    // deno-lint-ignore no-explicit-any
    s1.fields.filter((f: any) => !f.system).map((
      // deno-lint-ignore no-explicit-any
      { id: _id, ...f }: any,
    ) => [f.name, f]),
  );
  const plain = { required: false, unique: false };
  assert.deepEqual(own, {
    title: {
      name: "title",
      type: "string",
      required: true,
      unique: true,
      min: 2,
      max: 80,
      pattern: "^[A-Z]",
      default: "Hello",
    },
    body: {
      name: "body",
      type: "text",
      ...plain,
      index: true,
      searchable: true,
      max: 5000,
    },
    contact: {
      name: "contact",
      type: "email",
      ...plain,
      default: "a@example.com",
    },
    site: {
      name: "site",
      type: "url",
      ...plain,
      default: "https://example.com/",
    },
    qty: {
      name: "qty",
      type: "int",
      ...plain,
      index: true,
      min: 0,
      max: 100,
      default: 5,
    },
    price: {
      name: "price",
      type: "double",
      ...plain,
      min: 0.5,
      default: 1.25,
    },
    active: { name: "active", type: "bool", ...plain, default: true },
    since: {
      name: "since",
      type: "date",
      ...plain,
      // the browser runs in UTC here; the form sends the UTC instant
      default: new Date("2024-05-06T07:08:09").toISOString(),
    },
    extra: { name: "extra", type: "json", ...plain, default: { a: [1] } },
    status: {
      name: "status",
      type: "select",
      required: false,
      unique: true,
      values: ["draft", "live"],
      default: "draft",
    },
    owner: {
      name: "owner",
      type: "relation",
      ...plain,
      foreign_key: { entity: "users", on_delete: "cascade" },
    },
    manual: {
      name: "manual",
      type: "file",
      ...plain,
      mime_types: ["application/pdf"],
    },
    photos: {
      name: "photos",
      type: "files",
      ...plain,
      min: 1,
      max: 3,
      mime_types: ["image/png", "image/jpeg"],
    },
  });

  // The same page at 390 px.
  const narrow = await adminPage(390);
  await narrow.goto(`${s.url}/mb/entities/new`);
  await narrow.getByLabel("Entity name").fill("things");
  await narrow.getByLabel("Entity type").selectOption("auth");
  let q = await addField(narrow, "nick", "string");
  await q.getByLabel("Pattern").fill("^[a-z]+$");
  q = await addField(narrow, "kind", "select");
  await addChip(q, "value", "a-rather-long-value-name");
  q = await addField(narrow, "link", "relation");
  await q.getByLabel("Target entity").selectOption("things"); // itself
  await checkPage(narrow, errors);
  await topShot(narrow, "schema_create");
  await narrow.getByRole("button", { name: "Create entity" }).click();
  await narrow.waitForURL(/\/mb\/entities\/things$/);
  const s2 = await api(s, "GET", "/schemas/things");
  assert.equal(s2.type, "auth");
  // deno-lint-ignore no-explicit-any
  assert.ok(s2.fields.some((f: any) => f.name === "password" && f.system));
  assert.deepEqual(
    // deno-lint-ignore no-explicit-any
    s2.fields.find((f: any) => f.name === "link").foreign_key,
    { entity: "things", on_delete: "set null" },
  );
  // An auth entity is edited like any other: its system fields stay.
  await narrow.goto(`${s.url}/mb/entities/things/schema`);
  await panel(narrow, 3).getByLabel("Name").waitFor();
  await addField(narrow, "bio", "text");
  await narrow.getByRole("button", { name: "Save changes" }).click();
  await narrow.getByText("Schema of things saved").waitFor();
  const s3 = await api(s, "GET", "/schemas/things");
  assert.deepEqual(
    // deno-lint-ignore no-explicit-any
    s3.fields.filter((f: any) => !f.system).map((f: any) => f.name),
    ["nick", "kind", "link", "bio"],
  );
  // deno-lint-ignore no-explicit-any
  assert.ok(s3.fields.some((f: any) => f.name === "password" && f.system));
  assert.deepEqual(errors, []);
}

/** schema form: edit renames (data kept), drops (column gone), adds, changes options */
async function editSteps({ s, adminPage, errors }: BrowserCase): Promise<void> {
  await api(s, "POST", "/schemas", {
    name: "notes",
    type: "base",
    fields: [
      { name: "title", type: "string", pattern: "^[A-Z]" },
      { name: "meta", type: "json" },
      { name: "n", type: "int", min: 0 },
      { name: "pics", type: "files", mime_types: ["image/png"] },
    ],
  });
  const rec = await api(s, "POST", "/entities/notes", {
    title: "Hello",
    meta: { a: 1 },
    n: 3,
  });
  for (const width of WIDTHS) {
    const page = await adminPage(width);
    await page.goto(`${s.url}/mb/entities/notes/schema`);
    await page.getByRole("link", { name: "Schema", exact: true }).waitFor();
    const type = panel(page, 1).getByLabel("Type");
    assert.ok(await type.isDisabled()); // a saved field's type is fixed
    await panel(page, 1).getByText("Fixed once saved").waitFor();
    await checkPage(page, errors);
    await topShot(page, "schema_edit");
    await page.close();
  }
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/notes/schema`);
  // A pattern the server refuses is shown at the pattern input.
  await panel(page, 1).getByLabel("Pattern").fill("(?<=a)b");
  await page.getByRole("button", { name: "Save changes" }).click();
  await panel(page, 1).locator(".field.invalid").getByText(
    /Cannot accept field "title"\.pattern/,
  ).waitFor();
  await page.getByText("Not saved: see the marked input above.").waitFor();
  await panel(page, 1).getByLabel("Pattern").fill("");

  await panel(page, 1).getByLabel("Name").fill("heading");
  await panel(page, 3).getByLabel("Max value").fill("10");
  await panel(page, 4).getByRole("button", {
    name: "Remove MIME type image/png",
  })
    .click();
  await page.getByRole("button", { name: "Remove field meta" }).click();
  await page.getByText("will be dropped with its data when you save")
    .waitFor();
  const p = await addField(page, "tag", "string");
  await p.getByLabel("Default").fill("none");
  // Cancelling the confirmation saves nothing.
  await page.getByRole("button", { name: "Save changes" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByText('Drop field "meta" and all the data in it?')
    .waitFor();
  await dialog.getByRole("button", { name: "Cancel" }).click();
  assert.equal((await api(s, "GET", "/schemas/notes")).fields.length, 7);
  await page.getByRole("button", { name: "Save changes" }).click();
  await dialog.getByRole("button", { name: "Drop and save" }).click();
  await page.getByText("Schema of notes saved").waitFor();
  assert.deepEqual(errors, []);

  const after = await api(s, "GET", "/schemas/notes");
  // deno-lint-ignore no-explicit-any
  const own = after.fields.filter((f: any) => !f.system);
  // deno-lint-ignore no-explicit-any
  assert.deepEqual(own.map((f: any) => f.name), [
    "heading",
    "n",
    "pics",
    "tag",
  ]);
  assert.equal(own[0].pattern, undefined);
  assert.equal(own[1].max, 10);
  assert.equal(own[2].mime_types, undefined);
  const r = await api(s, "GET", `/entities/notes/${rec.id}`);
  assert.equal(r.heading, "Hello"); // renamed, data kept
  assert.equal(r.tag, "none"); // added with its default
  assert.ok(!("meta" in r) && !("title" in r));
  // The column is really gone: the filter language no longer knows it.
  const f = await s.request(
    "GET",
    "/api/v1/entities/notes?filter=meta%20%3D%20null",
    {
      token: await s.adminToken(),
    },
  );
  assert.equal(f.status, 400, f.text);
  // The form shows the saved state; nothing left to save.
  await panel(page, 1).getByLabel("Name").waitFor();
  assert.equal(
    await panel(page, 1).getByLabel("Name").inputValue(),
    "heading",
  );
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Nothing to save: no changes").waitFor();

  // Renaming the entity follows to its new address.
  await page.getByLabel("Entity name").fill("memos");
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.waitForURL(/\/mb\/entities\/memos\/schema$/);
  assert.equal(
    (await api(s, "GET", `/entities/memos/${rec.id}`)).heading,
    "Hello",
  );
  assert.deepEqual(errors, []);
}

/** schema form: the JSON view round-trips, says where JSON is wrong, and saves */
async function jsonSteps({ s, adminPage, errors }: BrowserCase): Promise<void> {
  await api(s, "POST", "/schemas", {
    name: "users",
    type: "auth",
    fields: [],
  });
  const saved = await api(s, "POST", "/schemas", {
    name: "posts",
    type: "base",
    fields: [
      {
        name: "title",
        type: "string",
        required: true,
        max: 90,
        default: "x",
      },
      { name: "score", type: "double", index: true, default: 1.5 },
      { name: "kind", type: "select", values: ["a", "b"] },
      { name: "by", type: "relation", foreign_key: { entity: "users" } },
      { name: "data", type: "json", default: { k: [1, null] } },
      { name: "when", type: "date", default: "2024-01-02T03:04:05.678Z" },
    ],
  });
  const page = await adminPage(1280);
  await page.goto(`${s.url}/mb/entities/posts/schema`);
  await page.getByRole("button", { name: "JSON" }).click();
  const box = page.getByLabel("Schema JSON");
  const text = await box.inputValue();
  assert.deepEqual(JSON.parse(text), {
    name: "posts",
    type: "base",
    has_api: true,
    // deno-lint-ignore no-explicit-any
    fields: saved.fields.filter((f: any) => !f.system),
  });
  await page.getByRole("button", { name: "Apply to form" }).click();
  await page.getByRole("button", { name: "JSON" }).click();
  assert.equal(await box.inputValue(), text); // JSON → form → JSON
  await checkPage(page, errors);

  await box.fill('{\n  "name": "posts",\n  "fields": [,]\n}');
  await page.getByRole("button", { name: "Apply to form" }).click();
  await page.getByText("Invalid JSON at line 3, column 14").waitFor();
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Invalid JSON at line 3, column 14").waitFor();

  // Rename a field and drop another from the JSON, then save from there.
  const edited = JSON.parse(text);
  edited.fields[0].name = "headline";
  edited.fields.splice(2, 1);
  await box.fill(JSON.stringify(edited, null, 2));
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.getByRole("dialog").getByRole("button", {
    name: "Drop and save",
  })
    .click();
  await page.getByText("Schema of posts saved").waitFor();
  const after = await api(s, "GET", "/schemas/posts");
  // deno-lint-ignore no-explicit-any
  assert.deepEqual(after.fields.filter((f: any) => !f.system), edited.fields);
  assert.equal(JSON.parse(await box.inputValue()).fields[0].name, "headline");

  // A system entity is shown, not editable.
  await page.goto(`${s.url}/mb/entities/mb_admins/schema`);
  await page.getByText("mb_admins is a system entity").waitFor();
  assert.ok(await page.getByLabel("Entity name").isDisabled());
  assert.equal(
    await page.getByRole("button", { name: "Save changes" }).count(),
    0,
  );
  assert.deepEqual(errors, []);
}

/** schema form: a view's SQL is checked on save; deleting entities */
async function viewAndDeleteSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  await api(s, "POST", "/schemas", {
    name: "users",
    type: "auth",
    fields: [],
  });
  await api(s, "POST", "/schemas", {
    name: "items",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "owner", type: "relation", foreign_key: { entity: "users" } },
    ],
  });
  await api(s, "POST", "/entities/items", { title: "one" });
  const page = await adminPage(390);
  await page.goto(`${s.url}/mb/entities/new`);
  await page.getByLabel("Entity name").fill("item_titles");
  await page.getByLabel("Entity type").selectOption("view");
  const sql = page.getByLabel("View SQL");
  await sql.fill("SELECT id, nope FROM items");
  await page.getByRole("button", { name: "Create entity" }).click();
  const err = page.locator(".field.invalid .error-text");
  await err.waitFor();
  assert.match(await err.innerText(), /view_query|view/i);
  await checkPage(page, errors);
  await topShot(page, "schema_view_error");
  await sql.fill("SELECT id, title FROM items");
  await page.getByRole("button", { name: "Create entity" }).click();
  await page.waitForURL(/\/mb\/entities\/item_titles$/);
  const v = await api(s, "GET", "/schemas/item_titles");
  assert.equal(v.view_query, "SELECT id, title FROM items");

  // Edit the view: its columns are listed; bad SQL again refused.
  await page.goto(`${s.url}/mb/entities/item_titles/schema`);
  await page.getByRole("cell", { name: "items.title" }).waitFor();
  await sql.fill("SELECT title FROM items");
  await page.getByRole("button", { name: "Save changes" }).click();
  await err.waitFor();
  await sql.fill("SELECT id, title AS name FROM items");
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Schema of item_titles saved").waitFor();
  assert.equal(
    (await api(s, "GET", "/entities/item_titles")).items[0].name,
    "one",
  );

  // users is pointed at by items.owner: the 409 is explained.
  await page.goto(`${s.url}/mb/entities/users/schema`);
  await page.getByRole("button", { name: "Delete entity users" }).click();
  await page.getByRole("dialog").getByRole("button", {
    name: "Delete entity",
  })
    .click();
  await page.getByText(
    /referenced by items\.owner.*change or delete that relation/,
  )
    .waitFor();
  await api(s, "GET", "/schemas/users"); // still there
  await topShot(page, "schema_delete_refused");

  // The view goes first, then items, then the auth entity, by the form.
  for (const name of ["item_titles", "items", "users"]) {
    await page.goto(`${s.url}/mb/entities/${name}/schema`);
    await page.getByRole("button", { name: `Delete entity ${name}` }).click();
    await page.getByRole("dialog").getByRole("button", {
      name: "Delete entity",
    })
      .click();
    await page.waitForURL(/\/mb$/);
    const r = await s.request("GET", `/api/v1/schemas/${name}`, {
      token: await s.adminToken(),
    });
    assert.equal(r.status, 404);
  }
  assert.deepEqual(errors, []);
}

browserTest(
  "schema form: edit, create with every field type, JSON view, views and deleting",
  async (c) => {
    const parts = { ...c, adminPage: sharedLogin(c) };
    await editSteps(parts);
    await dropEntities(c.s, "memos");
    await createSteps(parts);
    await dropEntities(c.s, "gadgets", "things", "users");
    await jsonSteps(parts);
    await dropEntities(c.s, "posts", "users");
    await viewAndDeleteSteps(parts);
  },
);
