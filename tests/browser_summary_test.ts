/**
 * The records page's group-by summary in Chromium: counts per value of a
 * select, a bool and a relation field (shown by the author's name), most
 * first, for the rows the table's filter lets through; axe and
 * screenshots at 1280 and 390 px.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { axeSerious, browserTest, scrollWidth, shot } from "./_browser.ts";
import { sharedLogin } from "./_browser_pages.ts";
import { setupBlog } from "./_records_fixtures.ts";
import { poll } from "./_wait.ts";

/** The summary's rows as [value, count]. */
async function counts(page: Page): Promise<[string, number][]> {
  const rows = page.locator(".summary-table tbody tr");
  const out: [string, number][] = [];
  for (let i = 0; i < await rows.count(); i++) {
    const cells = rows.nth(i).locator("td");
    out.push([
      (await cells.nth(0).innerText()).trim(),
      Number((await cells.nth(1).innerText()).trim()),
    ]);
  }
  return out;
}

/** Waits until the summary shows `expected` (fails with what it shows). */
async function shows(page: Page, expected: [string, number][]) {
  const want = JSON.stringify(expected);
  let got = "";
  try {
    await poll("summary", async () => {
      got = JSON.stringify(await counts(page));
      return got === want;
    });
  } catch {
    assert.fail(`summary: expected ${want}, shows ${got}`);
  }
}

browserTest(
  "records: the group-by summary counts records per value",
  async (c) => {
    const { s, errors } = c;
    const adminPage = sharedLogin(c);
    const token = await setupBlog(s);
    const author = async (name: string) =>
      (await s.request("POST", "/api/v1/entities/authors", {
        token,
        body: { name },
      })).data.id as string;
    const grace = await author("Grace Hopper");
    const ada = await author("Ada Lovelace");
    const posts: [string, boolean, string | null, number][] = [
      ["published", true, grace, 1],
      ["published", true, grace, 2],
      ["published", false, ada, 3],
      ["draft", false, grace, 4],
      ["draft", true, null, 5],
      ["published", false, null, 6],
    ];
    for (const [status, published, by, views] of posts) {
      const r = await s.request("POST", "/api/v1/entities/posts", {
        token,
        body: { title: `Post ${views}`, status, published, author: by, views },
      });
      assert.equal(r.status, 201, r.text);
    }
    for (const width of [1280, 390]) {
      const page = await adminPage(width);
      await page.goto(`${s.url}/mb/entities/posts`);
      await page.getByText("Summary: records per value").click();
      const by = page.getByLabel("Count by");
      await by.waitFor();
      assert.deepEqual(
        await by.locator("option").allInnerTexts(),
        ["published (bool)", "status (select)", "author (relation)"],
      );
      await shows(page, [["false", 3], ["true", 3]]);
      await by.selectOption("status");
      await shows(page, [["published", 4], ["draft", 2]]);
      await by.selectOption("author");
      await shows(page, [["Grace Hopper", 3], ["(empty)", 2], [
        "Ada Lovelace",
        1,
      ]]);
      assert.deepEqual(await axeSerious(page), []);
      assert.ok(await scrollWidth(page) <= width, "no overflow");
      await shot(page, "records_summary");
      // The table's filter applies to the summary.
      await page.getByLabel("Filter").fill("views > 2");
      await page.getByLabel("Filter").press("Enter");
      await shows(page, [["(empty)", 2], ["Ada Lovelace", 1], [
        "Grace Hopper",
        1,
      ]]);
      await page.close();
    }
    assert.deepEqual(errors, []);
  },
);
