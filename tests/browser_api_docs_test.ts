/**
 * The API tab of an entity and the API reference in Chromium: routes with
 * their rules, the record's fields from the OpenAPI document, sample calls
 * in curl and client code, the reference grouped by tag and filtered; axe
 * and screenshots at 1280 and 390 px.
 */
import assert from "node:assert/strict";
import { axeSerious, browserTest, scrollWidth, shot } from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";

async function seed(s: TestServer): Promise<void> {
  const token = await s.adminToken();
  for (
    const body of [
      {
        name: "users",
        type: "auth",
        fields: [{ name: "name", type: "string", required: true }],
        rules: { add: { mode: "public", expr: "" } },
      },
      {
        name: "posts",
        type: "base",
        fields: [
          { name: "title", type: "string", required: true, max: 120 },
          { name: "status", type: "select", values: ["draft", "published"] },
          {
            name: "author",
            type: "relation",
            foreign_key: { entity: "users", on_delete: "set null" },
          },
        ],
        rules: {
          list: { mode: "public", expr: "" },
          get: { mode: "public", expr: "" },
          add: { mode: "auth", expr: "" },
          update: { mode: "custom", expr: "record.author == auth.id" },
        },
      },
    ]
  ) {
    const r = await s.request("POST", "/api/v1/schemas", { token, body });
    assert.equal(r.status, 201, r.text);
  }
}

browserTest("api tab and reference", async (c) => {
  const { s, errors } = c;
  const adminPage = sharedLogin(c);
  await seed(s);
  for (const width of [1280, 390] as const) {
    const page = await adminPage(width);
    await page.goto(`${s.url}/mb/entities/posts/api`);
    await page.getByRole("heading", { name: "Routes" }).waitFor();
    // Routes, each with the rule that decides it.
    await page.getByText("list rule: anyone").waitFor();
    await page.getByText("add rule: signed-in users").waitFor();
    await page.getByText("update rule: custom: record.author == auth.id")
      .waitFor();
    await page.getByText("delete rule: admins only").waitFor();
    // The record's fields, from the document.
    const fields = page.locator("table.api-fields");
    await fields.getByText('"draft" | "published" | null').waitFor();
    await fields.getByText("≤ 120 chars").waitFor();
    await fields.getByText("→ users").waitFor();
    // Sample calls: curl first, then the client.
    const create = page.locator("pre.api-sample").filter({
      hasText: "-X POST",
    });
    assert.match(await create.innerText(), /"title":"title"/);
    await page.getByRole("button", { name: "Client (TypeScript)" }).click();
    await page.getByText('mb.entity("posts").create(').waitFor();
    assert.deepEqual(await axeSerious(page), []);
    assert.ok(await scrollWidth(page) <= width, "no sideways scroll");
    await shot(page, `api_tab_${width}`);

    // The reference: every area, filtered.
    await page.getByRole("link", { name: "API reference" }).first().click();
    await page.getByRole("heading", { name: "API reference" }).waitFor();
    await page.getByRole("heading", { name: "schemas", exact: true }).waitFor();
    await page.getByRole("heading", { name: "posts", exact: true }).waitFor();
    await page.getByLabel("Filter routes").fill("login");
    await page.locator("summary").filter({
      hasText: "/api/v1/sys/admins/login",
    })
      .click();
    await page.locator("pre").filter({ hasText: "identity: string" }).first()
      .waitFor();
    assert.equal(
      await page.getByRole("heading", { name: "posts", exact: true }).count(),
      0,
    );
    assert.deepEqual(await axeSerious(page), []);
    assert.ok(await scrollWidth(page) <= width, "no sideways scroll");
    await shot(page, `api_reference_${width}`);
  }
  assert.deepEqual(errors, []);
});
