/**
 * Relations in the dashboard, in Chromium at 1280 and 390 px (axe,
 * screenshots): the records table's related columns (`author.name`,
 * `author.team.name`) come in the page's one list request (`expand`), a
 * back-relation count column from one aggregate request, both kept after a
 * reload, and on records arriving live; the record form's
 * multiple-relation picker (chips in order, remove, add by search and
 * keyboard, `max`); the rule editor's
 * completions through relations and into a back-relation's `.some(…)`;
 * the entity form making a multiple relation (fixed once saved).
 */
import assert from "node:assert/strict";
import type { Page, Request } from "playwright-core";
import {
  axeSerious,
  browserTest,
  scrollWidth,
  shot,
  WIDTHS,
} from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import { poll } from "./_wait.ts";

interface Seeded {
  token: string;
  grace: string;
  compilers: string;
  notes: string;
  tags: Record<string, string>;
}

async function seed(s: TestServer): Promise<Seeded> {
  const token = await s.adminToken();
  const schema = async (body: unknown) => {
    const r = await s.request("POST", "/api/v1/schemas", { token, body });
    assert.equal(r.status, 201, r.text);
  };
  const add = async (entity: string, body: unknown) => {
    const r = await s.request("POST", `/api/v1/entities/${entity}`, {
      token,
      body,
    });
    assert.equal(r.status, 201, r.text);
    return r.data.id as string;
  };
  const rel = (name: string, entity: string, more = {}) => ({
    name,
    type: "relation",
    foreign_key: { entity, on_delete: "set null" },
    ...more,
  });
  await schema({
    name: "teams",
    type: "base",
    fields: [{ name: "name", type: "string" }],
  });
  await schema({
    name: "writers",
    type: "base",
    fields: [{ name: "name", type: "string" }, rel("team", "teams")],
  });
  await schema({
    name: "tags",
    type: "base",
    fields: [{ name: "label", type: "string" }],
  });
  await schema({
    name: "articles",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      rel("author", "writers"),
      rel("tags", "tags", { multiple: true, max: 3 }),
    ],
  });
  await schema({
    name: "remarks",
    type: "base",
    fields: [{ name: "text", type: "string" }, rel("article", "articles")],
  });
  const core = await add("teams", { name: "Core" });
  const grace = await add("writers", { name: "Grace", team: core });
  const ada = await add("writers", { name: "Ada" });
  const tags: Record<string, string> = {};
  for (const label of ["go", "rust", "zig", "deno"]) {
    tags[label] = await add("tags", { label });
  }
  const compilers = await add("articles", {
    title: "On compilers",
    author: grace,
  });
  const notes = await add("articles", {
    title: "Notes",
    author: ada,
    tags: [tags.deno],
  });
  for (
    const [text, article] of [["a", compilers], ["b", compilers], ["c", notes]]
  ) {
    await add("remarks", { text, article });
  }
  return { token, grace, compilers, notes, tags };
}

/** The cells of the row whose title is `title`, by column header. */
async function row(page: Page, title: string): Promise<Record<string, string>> {
  const headers = await page.locator(".records-table thead th").allInnerTexts();
  const cells = await page.locator(".records-table tbody tr", {
    has: page.getByRole("cell", { name: title, exact: true }),
  }).locator("td").allInnerTexts();
  const out: Record<string, string> = {};
  headers.forEach((h, i) => out[h.replace(/[▲▼↕]/g, "").trim()] = cells[i]);
  return out;
}

/** API requests a page makes, as `<path>?<query>` (decoded). */
function recordRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on("request", (r: Request) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/api/v1/entities/")) {
      seen.push(decodeURIComponent(u.pathname + u.search));
    }
  });
  return seen;
}

async function columns(page: Page, s: TestServer, d: Seeded, width: number) {
  await page.getByText("Columns", { exact: true }).click();
  await page.getByText("author → writers").click();
  await page.getByRole("checkbox", { name: "author.name", exact: true })
    .check();
  await page.getByText("author.team → teams").click();
  await page.getByRole("checkbox", { name: "author.team.name", exact: true })
    .check();
  await page.getByRole("checkbox", { name: "remarks (count)" }).check();
  assert.deepEqual(await axeSerious(page), []);
  await shot(page, "relations_column_picker");
  await page.getByText("Columns", { exact: true }).click();
  await poll("related columns", async () => {
    const r = await row(page, "On compilers");
    return r["author.name"] === "Grace" && r["author.team.name"] === "Core" &&
      r["remarks (count)"] === "2";
  });

  // A fresh load: the saved columns, one list request (with expand) and
  // one aggregate; relation labels come from expand (no request to writers).
  const seen = recordRequests(page);
  await page.reload();
  await poll("columns after reload", async () => {
    const r = await row(page, "Notes").catch(() => null);
    return r?.["author.name"] === "Ada" && r["remarks (count)"] === "1";
  });
  const a = await row(page, "On compilers");
  const n = await row(page, "Notes");
  assert.equal(a.author, "Grace"); // the relation's own column, labelled
  assert.equal(a["author.team.name"], "Core");
  assert.equal(n["author.team.name"].replace(/\s+/g, " "), "— empty");
  assert.equal(n.tags, "deno");
  const lists = seen.filter((u) => u.startsWith("/api/v1/entities/articles?"));
  assert.equal(lists.length, 1, lists.join("\n"));
  assert.match(lists[0], /expand=author\.team,tags(&|$)/);
  const aggregates = seen.filter((u) => u.includes("/aggregate"));
  assert.equal(aggregates.length, 1, aggregates.join("\n"));
  assert.match(aggregates[0], /^\/api\/v1\/entities\/remarks\/aggregate\?/);
  assert.match(aggregates[0], /group=article/);
  assert.equal(
    seen.filter((u) => /entities\/(writers|teams|tags)/.test(u)).length,
    0,
    seen.join("\n"),
  );
  assert.deepEqual(await axeSerious(page), []);
  assert.ok(await scrollWidth(page) <= width, "no overflow");
  await shot(page, "relations_columns");
  // A record made elsewhere arrives live with its related values (the
  // realtime topic asks for the same expand).
  const title = `Live ${width}`;
  const made = await s.request("POST", "/api/v1/entities/articles", {
    token: d.token,
    body: { title, author: d.grace },
  });
  assert.equal(made.status, 201, made.text);
  await poll("live row", async () => {
    const r = await row(page, title).catch(() => null);
    return r?.["author.team.name"] === "Core" && r.author === "Grace" &&
      r["remarks (count)"] === "0";
  });
}

async function multiPicker(page: Page, s: TestServer, d: Seeded) {
  await page.goto(`${s.url}/mb/entities/articles/records/${d.notes}`);
  const chips = page.getByRole("list", { name: "tags: chosen tags" });
  await chips.getByRole("link", { name: "deno" }).waitFor();
  const input = page.getByRole("combobox", { name: "tags" });
  // By search and click.
  await input.fill("ru");
  await page.getByRole("option", { name: /^rust/ }).click();
  await chips.getByRole("link", { name: "rust" }).waitFor();
  // By keyboard; one already chosen is not offered again.
  await input.fill("o");
  await page.getByRole("option", { name: /^go/ }).waitFor();
  assert.equal(await page.getByRole("option", { name: /^deno/ }).count(), 0);
  await input.press("Enter");
  await chips.getByRole("link", { name: "go" }).waitFor();
  // Three is the field's max: the search is off until one goes.
  assert.ok(await input.isDisabled());
  assert.equal(await input.getAttribute("placeholder"), "Full: at most 3");
  assert.deepEqual(await chips.getByRole("link").allInnerTexts(), [
    "deno",
    "rust",
    "go",
  ]);
  assert.deepEqual(await axeSerious(page), []);
  await shot(page, "relations_multi_picker");
  await page.getByRole("button", { name: "Remove deno from tags" }).click();
  assert.ok(await input.isEnabled());
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Record saved").waitFor();
  const r = await s.request("GET", `/api/v1/entities/articles/${d.notes}`, {
    token: d.token,
  });
  assert.deepEqual(r.data.tags, [d.tags.rust, d.tags.go]);
  // The single relation picker is as it was.
  await page.getByLabel("author", { exact: true }).waitFor();
  assert.equal(
    await page.getByLabel("author", { exact: true }).getAttribute("role"),
    "combobox",
  );
}

async function completion(page: Page, s: TestServer, width: number) {
  await page.goto(`${s.url}/mb/entities/articles/rules`);
  await page.getByLabel("Who may list records").selectOption({
    label: "Custom expression",
  });
  const input = page.getByLabel("Rule for listing", { exact: true });
  const list = page.getByRole("listbox", {
    name: "Completions for Rule for listing",
  });
  await input.fill("");
  await input.pressSequentially("record.author.");
  await list.getByRole("option", { name: "record.author.name", exact: true })
    .waitFor();
  await list.getByRole("option", { name: "record.author.team.", exact: true })
    .click();
  assert.equal(await input.inputValue(), "record.author.team.");
  await list.getByRole("option", {
    name: "record.author.team.name",
    exact: true,
  }).waitFor();
  await input.pressSequentially("n");
  await input.press("Enter");
  assert.equal(await input.inputValue(), "record.author.team.name");
  await input.pressSequentially(' != "" && record.rem');
  const some = list.getByRole("option", {
    name: "record.remarks_via_article.some(r => r.",
    exact: true,
  });
  await list.getByRole("option", {
    name: "record.remarks_via_article.length",
    exact: true,
  }).waitFor();
  await some.click();
  // Inside the call, the variable has the remarks' fields.
  await list.getByRole("option", { name: "r.text", exact: true }).waitFor();
  assert.deepEqual(await axeSerious(page), []);
  assert.ok(await scrollWidth(page) <= width, "no overflow");
  await shot(page, "relations_rule_completion");
  await input.press("Enter");
  assert.equal(
    await input.inputValue(),
    'record.author.team.name != "" && record.remarks_via_article.some(r => r.id',
  );
}

async function schemaForm(page: Page, s: TestServer, d: Seeded) {
  await page.goto(`${s.url}/mb/entities/articles/schema`);
  // Declared fields in order: title, author, tags.
  const tags = page.locator("fieldset.field-panel").nth(2);
  assert.equal(await tags.getByLabel("Name").inputValue(), "tags");
  const several = tags.getByRole("checkbox", { name: /Several records/ });
  assert.ok(await several.isChecked());
  assert.ok(await several.isDisabled()); // fixed once saved
  assert.equal(await tags.getByLabel("At most (records)").inputValue(), "3");
  await page.getByRole("button", { name: "+ Add field" }).click();
  const p = page.locator("fieldset.field-panel").last();
  await p.getByLabel("Name").fill("readers");
  await p.getByLabel("Type").selectOption("relation");
  await p.getByLabel("Target entity").selectOption("writers");
  await p.getByRole("checkbox", { name: /Several records/ }).check();
  await p.getByLabel("At most (records)").fill("2");
  assert.deepEqual(await axeSerious(page), []);
  await page.getByRole("button", { name: "Save changes" }).click();
  type Field = { name: string; multiple?: boolean; max?: number };
  const readers = await poll("readers saved", async () => {
    const r = await s.request("GET", "/api/v1/schemas/articles", {
      token: d.token,
    });
    return (r.data.fields as Field[]).find((x) => x.name === "readers");
  });
  assert.deepEqual([readers.multiple, readers.max], [true, 2]);
}

browserTest(
  "relations in the dashboard: related and count columns, multiple-relation picker, rule completion",
  async (c) => {
    const { s, errors } = c;
    const adminPage = sharedLogin(c);
    const d = await seed(s);
    for (const width of WIDTHS) {
      // Each width starts from the same data.
      const reset = await s.request(
        "PATCH",
        `/api/v1/entities/articles/${d.notes}`,
        { token: d.token, body: { tags: [d.tags.deno] } },
      );
      assert.equal(reset.status, 200, reset.text);
      const page = await adminPage(width);
      await page.goto(`${s.url}/mb/entities/articles`);
      await page.getByRole("cell", { name: "Notes", exact: true }).waitFor();
      await columns(page, s, d, width);
      await multiPicker(page, s, d);
      await completion(page, s, width);
      await page.close();
    }
    const page = await adminPage(1280);
    await schemaForm(page, s, d);
    assert.deepEqual(errors, []);
  },
);
