/**
 * Schema export / import in Chromium (`/mb/schemas`): export from one
 * server downloads `schema.json`; importing it into another server shows
 * the dry run's diff (entities created, changed and, with delete_missing,
 * deleted; a changed field's options from → to) and applies it after a
 * confirmation; a refused import (at the dry run, and at apply when the
 * data changed meanwhile) shows the server's reason and leaves every
 * schema as it was. axe and screenshots at 1280 and 390 px.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  axeSerious,
  browserTest,
  loginAs,
  scrollWidth,
  shot,
} from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";
import { startServer, type TestServer } from "./_server.ts";

async function create(s: TestServer, body: unknown): Promise<void> {
  const token = await s.adminToken();
  const r = await s.request("POST", "/api/v1/schemas", { token, body });
  assert.equal(r.status, 201, r.text);
}

/** The source: users and posts (title required, a relation to users). */
async function seedSource(s: TestServer): Promise<void> {
  await create(s, {
    name: "users",
    type: "auth",
    fields: [{ name: "nickname", type: "string" }],
  });
  await create(s, {
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string", required: true, max: 120 },
      { name: "body", type: "text" },
      {
        name: "author",
        type: "relation",
        foreign_key: { entity: "users", on_delete: "set null" },
      },
    ],
    rules: { list: { mode: "public", expr: "" } },
  });
}

/** The target: an older posts (title optional, a field "old") and drafts. */
async function seedTarget(s: TestServer): Promise<void> {
  await create(s, {
    name: "posts",
    type: "base",
    fields: [
      { name: "title", type: "string" },
      { name: "body", type: "text" },
      { name: "old", type: "int" },
    ],
  });
  await create(s, {
    name: "drafts",
    type: "base",
    fields: [{ name: "text", type: "text" }],
  });
  const token = await s.adminToken();
  const r = await s.request("POST", "/api/v1/entities/posts", {
    token,
    body: { title: "kept", old: 7 },
  });
  assert.equal(r.status, 201, r.text);
}

/** Every schema of a server, as the export shows it (ids included). */
async function exported(s: TestServer): Promise<string> {
  const r = await s.request("GET", "/api/v1/schemas/export", {
    token: await s.adminToken(),
  });
  assert.equal(r.status, 200, r.text);
  return JSON.stringify(r.data);
}

async function checkPage(page: Page, width: number, name: string) {
  assert.deepEqual(await axeSerious(page), [], name);
  assert.ok(await scrollWidth(page) <= width, `${name}: no sideways scroll`);
  await shot(page, name);
}

browserTest("schema export and import", async (c) => {
  const { s, newPage, errors } = c;
  await seedSource(s);
  const target = await startServer(s.db);
  // Pages of the target share one login (its first page logs in).
  const targetPage = sharedLogin({
    ...c,
    s: target,
    adminPage: async (width) => {
      const p = await newPage(width);
      await loginAs(p, target);
      return p;
    },
  });
  const dir = await Deno.makeTempDir({ prefix: "mb_schema_transfer_" });
  try {
    await seedTarget(target);

    // Export from the source: schema.json is downloaded and shown.
    const page = await newPage(1280);
    await loginAs(page, s);
    await page.getByRole("link", { name: "Export / import schemas" }).click();
    await page.getByRole("heading", { name: "Schema export / import" })
      .waitFor();
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export schemas" }).click(),
    ]);
    assert.equal(download.suggestedFilename(), "schema.json");
    const file = `${dir}/schema.json`;
    await download.saveAs(file);
    const body = JSON.parse(await Deno.readTextFile(file));
    assert.deepEqual(
      body.schemas.map((x: { name: string }) => x.name),
      ["users", "posts"],
      "the export body, in dependency order",
    );
    assert.equal(JSON.stringify(body), await exported(s));
    const shown = page.getByLabel("schema.json (2 entities)");
    assert.deepEqual(JSON.parse(await shown.inputValue()), body);
    await checkPage(page, 1280, "schema_export");
    // Each export downloads again.
    const [again] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export schemas" }).click(),
    ]);
    assert.equal(
      await Deno.readTextFile(await again.path()),
      await Deno.readTextFile(file),
    );

    // Import into the target, at both widths: the dry run's diff.
    const before = await exported(target);
    for (const width of [390, 1280]) {
      const p = await targetPage(width);
      await p.goto(`${target.url}/mb/schemas`);
      await p.getByLabel("Schema file").setInputFiles(file);
      await p.getByLabel("Schema JSON (from schema.json)").waitFor();
      await p.getByLabel("Delete the entities the file does not list")
        .check();
      await p.getByText("Warning: every entity of this server").waitFor();
      await p.getByRole("button", { name: "Preview changes" }).click();
      const result = p.locator(".transfer-result");
      await result.getByText(
        "3 entities change: 1 created, 1 changed, 1 deleted.",
      ).waitFor();
      const posts = result.locator(".diff-entity").filter({ hasText: "posts" });
      assert.equal(
        await posts.locator(".diff-entity-head").innerText(),
        "changed posts",
      );
      // Each detail: its key, then label, from and to of each line.
      const detail = (key: string) =>
        posts.locator(".diff-detail").filter({ hasText: key })
          .locator(".diff-key code, .diff-label, .diff-from, .diff-to")
          .allInnerTexts();
      assert.deepEqual(await detail("fields.title"), [
        "fields.title",
        "required",
        "false",
        "true",
        "max",
        "none",
        "120",
      ]);
      assert.deepEqual(await detail("fields.old"), [
        "fields.old",
        'type: "int"',
      ]);
      assert.deepEqual(await detail("rules.list"), [
        "rules.list",
        "admins only",
        "anyone",
      ]);
      await result.locator(".diff-entity.diff-create").filter({
        hasText: "users",
      }).getByText("fields.nickname").waitFor();
      await result.locator(".diff-entity.diff-delete").filter({
        hasText: "drafts",
      }).getByText("fields.text").waitFor();
      await checkPage(p, width, "schema_import_preview");
      if (width === 1280) {
        // Cancelling the confirmation applies nothing.
        await p.getByRole("button", { name: "Apply changes to 3 entities" })
          .click();
        const dialog = p.locator("dialog.confirm");
        assert.match(
          await dialog.innerText(),
          /Apply the changes to 3 entities\? They are applied all or nothing.*Deleted with all their records: drafts\. Deleted fields lose their data\./s,
        );
        await checkPage(p, width, "schema_import_confirm");
        await dialog.getByRole("button", { name: "Cancel" }).click();
        assert.equal(await exported(target), before);
        // Confirmed: applied, the sidebar follows.
        await p.getByRole("button", { name: "Apply changes to 3 entities" })
          .click();
        await dialog.getByRole("button", { name: "Apply changes" }).click();
        await p.getByRole("heading", { name: "Applied" }).waitFor();
        await p.getByText(
          "3 entities changed: 1 created, 1 changed, 1 deleted.",
        )
          .waitFor();
        await p.locator(".sidebar").getByRole("link", { name: /users/ })
          .waitFor();
        assert.equal(
          await p.locator(".sidebar").getByRole("link", { name: /drafts/ })
            .count(),
          0,
        );
        await checkPage(p, width, "schema_import_applied");
        // The target now has the source's schemas, its record kept.
        const now = JSON.parse(await exported(target)).schemas;
        assert.deepEqual(
          now.map((x: { name: string }) => x.name),
          ["users", "posts"],
        );
        const postsNow = now[1];
        assert.deepEqual(
          postsNow.fields.filter((f: { system?: boolean }) => !f.system)
            .map((f: { name: string }) => f.name),
          ["title", "body", "author"],
        );
        const rec = await target.request("GET", "/api/v1/entities/posts", {
          token: await target.adminToken(),
        });
        assert.equal(rec.data.items[0].title, "kept");
        // Previewing again: nothing left to change, no Apply.
        await p.getByRole("button", { name: "Preview changes" }).click();
        await p.getByText(
          "Nothing to change: this server's schemas already match.",
        ).waitFor();
        assert.equal(
          await p.getByRole("button", { name: /^Apply/ }).count(),
          0,
        );
      }
      await p.context().close();
    }

    // A refused dry run: the server's reason, no diff, no Apply.
    const p = await targetPage(390);
    await p.goto(`${target.url}/mb/schemas`);
    const json = p.getByLabel("Schema JSON");
    await json.fill('{"schemas": [');
    await p.getByRole("button", { name: "Preview changes" }).click();
    await p.getByText(
      "Cannot read the schemas: Invalid JSON at line 1, column 14",
    ).waitFor();
    const unchanged = await exported(target);
    const schemas = JSON.parse(unchanged).schemas;
    const badType = structuredClone(schemas);
    badType[1].fields.find((f: { name: string }) => f.name === "title").type =
      "int";
    await json.fill(JSON.stringify({ schemas: badType }));
    await p.getByRole("button", { name: "Preview changes" }).click();
    const alert = p.getByRole("alert").filter({
      hasText: "nothing was applied",
    });
    await alert.waitFor();
    // The guard's own words, as the schema PATCH would answer them.
    assert.equal(
      await alert.locator(".error-box").innerText(),
      'Cannot change field "title": its type cannot change (add a new field instead)',
    );
    assert.equal(await p.locator(".transfer-result").count(), 0);
    await checkPage(p, 390, "schema_import_refused");
    assert.equal(await exported(target), unchanged);

    // Refused at apply: the data changed after the dry run (a field made
    // unique now has duplicates); the new entity of the same import is not
    // created either.
    const unique = structuredClone(schemas);
    unique[1].fields.find((f: { name: string }) => f.name === "title").unique =
      true;
    unique.push({
      name: "tags",
      type: "base",
      fields: [{ name: "label", type: "string" }],
    });
    await json.fill(JSON.stringify({ schemas: unique }));
    await p.getByRole("button", { name: "Preview changes" }).click();
    await p.getByText("2 entities change: 1 created, 1 changed.").waitFor();
    await target.request("POST", "/api/v1/entities/posts", {
      token: await target.adminToken(),
      body: { title: "kept" },
    });
    await p.getByRole("button", { name: "Apply changes to 2 entities" })
      .click();
    await p.locator("dialog.confirm").getByRole("button", {
      name: "Apply changes",
    }).click();
    // Shown beside the Apply button that was pressed.
    const applyAlert = p.locator(".transfer-result").getByRole("alert");
    await applyAlert.waitFor();
    assert.match(
      await applyAlert.locator(".error-box").innerText(),
      /^Cannot change entity posts: existing records have duplicate values/,
    );
    assert.match(await applyAlert.innerText(), /nothing was applied/);
    await checkPage(p, 390, "schema_import_apply_refused");
    assert.equal(await exported(target), unchanged);
    // The preview stays: the admin may fix the data and apply again.
    await p.getByRole("button", { name: "Apply changes to 2 entities" })
      .waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await target.close();
    await Deno.remove(dir, { recursive: true });
  }
});
