/**
 * The entity form's Indexes section in Chromium: add an index from the
 * keyboard (fields picked in order, moved, unique), save, see it in the
 * schema and the database; a refused list shown at the index; a field an
 * index uses cannot be removed alone; the page is accessible at both widths.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { axeSerious, browserTest, scrollWidth, shot } from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import { dbIndexes, ITEMS } from "./_indexes_fixtures.ts";
import { poll } from "./_wait.ts";

async function schema(s: TestServer, name: string) {
  const r = await s.request("GET", `/api/v1/schemas/${name}`, {
    token: await s.adminToken(),
  });
  assert.equal(r.status, 200, r.text);
  return r.data;
}

const index = (page: Page, n: number) =>
  page.locator("fieldset.index-panel").nth(n - 1);

/** The status of the next schema PATCH the page sends while `act` runs. */
async function patched(page: Page, act: () => Promise<void>): Promise<number> {
  const answer = page.waitForResponse((r) =>
    r.request().method() === "PATCH" && r.url().includes("/api/v1/schemas/")
  );
  await act();
  return (await answer).status();
}

async function save(page: Page): Promise<number> {
  return await patched(
    page,
    () => page.getByRole("button", { name: "Save changes" }).click(),
  );
}

async function focused(page: Page): Promise<string | null> {
  return await page.evaluate(() =>
    (globalThis as unknown as {
      document: { activeElement: { getAttribute(n: string): string } | null };
    }).document.activeElement?.getAttribute("aria-label") ?? null
  );
}

browserTest(
  "indexes form: add, order, unique, save, refuse, remove",
  async (c) => {
    const { s, errors } = c;
    const adminPage = sharedLogin(c);
    const r = await s.request("POST", "/api/v1/schemas", {
      token: await s.adminToken(),
      body: { ...ITEMS, indexes: [] },
    });
    assert.equal(r.status, 201, r.text);
    const page = await adminPage(1280);
    await page.goto(`${s.url}/mb/entities/items/schema`);
    await page.getByText("No indexes over several fields.").waitFor();

    // Keyboard: the new index's field choice takes the focus.
    await page.getByRole("button", { name: "+ Add index" }).focus();
    await page.keyboard.press("Enter");
    await index(page, 1).waitFor();
    // (The focus moves in an effect after the render waitFor saw.)
    await poll(
      "the focus on the new index's field choice",
      async () => (await focused(page)) === "Add a field to index #1",
    ).catch(() => {/* the assertion below says where it is */});
    assert.equal(await focused(page), "Add a field to index #1");
    const choice = index(page, 1).getByLabel("Add a field to index #1");
    await choice.selectOption({ label: "n" });
    await choice.selectOption({ label: "tag" });
    await index(page, 1).getByRole("button", {
      name: "Move tag up in index #1",
    }).press("Enter");
    await index(page, 1).getByText("1. tag").waitFor();
    await index(page, 1).getByText("2. n").waitFor();
    await index(page, 1).getByLabel("Unique").press("Space");
    assert.ok(await index(page, 1).getByLabel("Unique").isChecked());
    assert.deepEqual(await axeSerious(page), []);
    await shot(page, "schema_indexes");
    assert.equal(await save(page), 200);
    await page.getByText("Schema of items saved").waitFor();
    const s1 = await schema(s, "items");
    assert.deepEqual(
      // deno-lint-ignore no-explicit-any
      s1.indexes.map((i: any) => [i.fields, i.unique]),
      [[["tag", "n"], true]],
    );
    assert.deepEqual(await dbIndexes(s, "items"), ["u:tag,n"]);
    await index(page, 1).locator("legend").getByText("tag, n").waitFor();

    // A second index with the same fields: the server's 400 at index #2.
    await page.getByRole("button", { name: "+ Add index" }).click();
    const second = index(page, 2).getByLabel("Add a field to index #2");
    await second.selectOption({ label: "tag" });
    await second.selectOption({ label: "n" });
    assert.equal(await save(page), 400);
    await index(page, 2).getByText(/same fields as indexes\[0\]/).waitFor();
    await page.getByText("Not saved: see the marked input above.").waitFor();
    await index(page, 2).getByRole("button", { name: "Remove index #2" })
      .click();

    // A field an index uses cannot go alone; with the index it can.
    await page.getByRole("button", { name: "Remove field n" }).click();
    await page.getByRole("button", { name: "Save changes" }).click();
    await index(page, 1).getByText(/Uses a field that is being removed/)
      .waitFor();
    await index(page, 1).getByText("(removed field)").waitFor();
    await index(page, 1).getByRole("button", {
      name: "Remove (removed field) from index #1",
    }).click();
    await page.getByRole("button", { name: "Save changes" }).click();
    const dialog = page.getByRole("dialog");
    const drop = dialog.getByRole("button", { name: "Drop and save" });
    assert.equal(await patched(page, () => drop.click()), 200);
    const s2 = await schema(s, "items");
    // deno-lint-ignore no-explicit-any
    assert.deepEqual(s2.indexes.map((i: any) => i.fields), [["tag"]]);
    // deno-lint-ignore no-explicit-any
    assert.ok(!s2.fields.some((f: any) => f.name === "n"));
    assert.deepEqual(await dbIndexes(s, "items"), ["u:tag"]);

    // The JSON view shows them and applies an edit back to the form.
    await page.getByRole("button", { name: "JSON", exact: true }).click();
    const text = page.getByLabel("Schema JSON");
    const body = JSON.parse(await text.inputValue());
    assert.deepEqual(body.indexes, [{ fields: ["tag"], unique: true }]);
    body.indexes = [{ fields: ["title", "created"], unique: false }];
    await text.fill(JSON.stringify(body, null, 2));
    await page.getByRole("button", { name: "Apply to form" }).click();
    await index(page, 1).locator("legend").getByText("title, created")
      .waitFor();
    assert.equal(await save(page), 200);
    assert.deepEqual(await dbIndexes(s, "items"), ["i:title,created"]);

    // The same page at 390 px.
    const narrow = await adminPage(390);
    await narrow.goto(`${s.url}/mb/entities/items/schema`);
    await index(narrow, 1).waitFor();
    await narrow.getByRole("button", { name: "+ Add index" }).click();
    await index(narrow, 2).getByLabel("Add a field to index #2")
      .selectOption({ label: "updated" });
    assert.deepEqual(await axeSerious(narrow), []);
    assert.equal(await scrollWidth(narrow), 390);
    await shot(narrow, "schema_indexes");
    assert.deepEqual(errors, []);
  },
);
