/**
 * The dashboard's Backups page in Chromium: reached from the sidebar; a
 * backup made with a name and one without; the list (name, size, created);
 * a download by its plain link (an admin file token in the query); an
 * upload of that archive, a junk upload refused; a delete after its
 * confirmation; the schedule shown in words and saved (a wrong one
 * explained); and a restore whose confirmation says what is replaced, after
 * which the admin logs in again and the data is the backup's. axe-core,
 * no overflow and screenshots (`backups_1280.png`, `backups_390.png`,
 * `backups_restore_1280.png`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Page } from "playwright-core";
import { axeSerious, browserTest, scrollWidth, shot } from "./_browser.ts";
import { painted } from "./_browser_pages.ts";
import { poll } from "./_wait.ts";

/** axe, no overflow, and a screenshot at both widths (same page). */
async function checkBoth(page: Page, name: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await painted(page);
    assert.deepEqual(await axeSerious(page), [], `${name} at ${width}`);
    assert.equal(await scrollWidth(page), width, `${name} fits ${width} px`);
    await shot(page, name);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

browserTest(
  "backups: make, list, download, upload, delete, schedule and restore",
  async ({ s, adminPage, errors }) => {
    const token = await s.adminToken();
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await s.request(method, path, { token, body });
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
      return r.data as { id: string };
    };
    await api("POST", "/api/v1/schemas", {
      name: "notes",
      type: "base",
      fields: [{ name: "title", type: "string" }],
    });
    const kept = await api("POST", "/api/v1/entities/notes", { title: "kept" });

    const page = await adminPage();
    await page.getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Backups" }).click();
    await page.getByRole("heading", { name: "Backups", level: 1 }).waitFor();
    await page.getByText("No backups yet.").waitFor();
    assert.equal(await page.title(), "Backups · Moonbase");

    // Made with a name, and without one.
    const rows = page.locator(".backups-table tbody tr");
    const make = page.getByRole("form", { name: "Make a backup" });
    await make.getByLabel("Name (optional)").fill("before-change");
    await make.getByRole("button", { name: "Make backup" }).click();
    await rows.filter({ hasText: "before-change.tar.gz" }).waitFor();
    await make.getByRole("button", { name: "Make backup" }).click();
    await rows.filter({ hasText: /mb_backup_/ }).waitFor();
    const listed = (await s.request("GET", "/api/v1/sys/backups", { token }))
      .data as { name: string; size: number }[];
    const before = listed.find((b) => b.name === "before-change.tar.gz")!;
    assert.ok(before.size > 0);

    // Downloaded by its plain link: the token is in the URL.
    const link = page.getByRole("link", {
      name: "Download before-change.tar.gz",
    });
    await poll(
      "the link's file token",
      async () => (await link.getAttribute("href")) ? true : undefined,
    );
    assert.match(await link.getAttribute("href") ?? "", /\?token=/);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      link.click(),
    ]);
    assert.equal(download.suggestedFilename(), "before-change.tar.gz");
    const saved = await download.path();
    assert.equal((await Deno.stat(saved)).size, before.size);

    // Uploaded under another name; junk refused and not kept.
    const upload = page.getByRole("form", { name: "Upload a backup" });
    await upload.getByLabel("Archive").setInputFiles(saved);
    await upload.getByLabel("Keep as (optional)").fill("uploaded");
    await upload.getByRole("button", { name: "Upload" }).click();
    await rows.filter({ hasText: "uploaded.tar.gz" }).waitFor();
    await upload.getByLabel("Archive").setInputFiles({
      name: "junk.tar.gz",
      mimeType: "application/gzip",
      buffer: Buffer.from("not an archive"),
    });
    await upload.getByRole("button", { name: "Upload" }).click();
    await upload.getByRole("alert").filter({ hasText: /Cannot/ }).waitFor();
    assert.equal(await rows.filter({ hasText: "junk" }).count(), 0);

    // Deleted after its confirmation.
    await page.getByRole("button", { name: "Delete uploaded.tar.gz" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("removed from the server").waitFor();
    await dialog.getByRole("button", { name: "Delete backup" }).click();
    await rows.filter({ hasText: "uploaded.tar.gz" }).waitFor({
      state: "detached",
    });

    // The schedule, in words as it is typed; a wrong one explained.
    const schedule = page.getByRole("form", { name: "Schedule" });
    const when = schedule.getByLabel("When (cron, UTC)");
    await when.fill("0 3 * * *");
    await schedule.getByText(/Not a schedule/).waitFor({ state: "detached" });
    await schedule.getByText("Every day at 03:00 UTC.").waitFor();
    await schedule.getByLabel("Keep").fill("5");
    await schedule.getByRole("button", { name: "Save schedule" }).click();
    await page.getByText("Backup schedule saved").waitFor();
    const settings = (await s.request("GET", "/api/v1/sys/settings", { token }))
      .data as { backups: { cron: string; keep: number } };
    assert.deepEqual(settings.backups, { cron: "0 3 * * *", keep: 5 });
    await when.fill("61 * * * *");
    await schedule.getByRole("button", { name: "Save schedule" }).click();
    await schedule.getByRole("alert").filter({ hasText: /Not a schedule/ })
      .waitFor();
    await when.fill("0 3 * * *");
    await schedule.getByText(/Not a schedule/).waitFor({ state: "detached" });

    await page.getByText("Backup schedule saved").waitFor({ state: "detached" })
      .catch(() => {}); // a toast on the screenshot is fine too
    await checkBoth(page, "backups");

    // Restored: the confirmation says what is replaced; then a new login,
    // and the data is the backup's.
    const later = await api("POST", "/api/v1/entities/notes", {
      title: "later",
    });
    await page.getByRole("button", { name: "Restore before-change.tar.gz" })
      .click();
    await dialog.getByText(/data \(.*\) is replaced by the backup's/).waitFor();
    await dialog.getByText(/admins become the backup's/).waitFor();
    await shot(page, "backups_restore");
    assert.deepEqual(await axeSerious(page), []);
    await dialog.getByRole("button", { name: "Restore backup" }).click();
    await page.getByRole("heading", { name: "Admin login" }).waitFor({
      timeout: 30_000,
    });
    await page.getByText(/Restored before-change\.tar\.gz/).waitFor();
    await page.getByLabel("Email").fill("admin@example.com");
    await page.getByLabel("Password").fill(s.adminPassword);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator(".topbar").waitFor();
    const fresh = await s.adminToken();
    const gone = await s.request("GET", `/api/v1/entities/notes/${later.id}`, {
      token: fresh,
    });
    assert.equal(gone.status, 404, "made after the backup: gone");
    const still = await s.request("GET", `/api/v1/entities/notes/${kept.id}`, {
      token: fresh,
    });
    assert.equal(still.status, 200, "in the backup: there");
    assert.deepEqual(errors, []);
  },
);
