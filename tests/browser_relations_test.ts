/**
 * Relation cells show the target record's label (its first string field),
 * as a link to that record.
 */
import assert from "node:assert/strict";
import { axeSerious, browserTest } from "./_browser.ts";

browserTest(
  "records: relation cells show the target's label and link to it",
  async ({ s, adminPage, errors }) => {
    const token = await s.adminToken();
    const make = async (body: unknown) => {
      const r = await s.request("POST", "/api/v1/schemas", { token, body });
      assert.equal(r.status, 201, r.text);
    };
    await make({
      name: "authors",
      type: "base",
      fields: [{ name: "name", type: "string" }],
    });
    await make({
      name: "books",
      type: "base",
      fields: [
        { name: "title", type: "string" },
        {
          name: "author",
          type: "relation",
          foreign_key: { entity: "authors" },
        },
      ],
    });
    const ada = await s.request("POST", "/api/v1/entities/authors", {
      token,
      body: { name: "Ada Lovelace" },
    });
    const anon = await s.request("POST", "/api/v1/entities/authors", {
      token,
      body: {},
    });
    for (
      const [title, author] of [["Notes", ada.data.id], [
        "Untitled",
        anon.data.id,
      ], ["Orphan", null]]
    ) {
      const r = await s.request("POST", "/api/v1/entities/books", {
        token,
        body: { title, author },
      });
      assert.equal(r.status, 201, r.text);
    }
    const page = await adminPage();
    await page.goto(`${s.url}/mb/entities/books`);
    const link = page.getByRole("link", { name: "Ada Lovelace" });
    await link.waitFor();
    assert.equal(
      await link.getAttribute("href"),
      `/mb/entities/authors/records/${ada.data.id}`,
    );
    // A target without a label keeps its short id.
    await page.getByRole("link", { name: `…${String(anon.data.id).slice(-8)}` })
      .waitFor();
    assert.deepEqual(await axeSerious(page), []);
    assert.deepEqual(errors, []);
  },
  ["sqlite"],
);
