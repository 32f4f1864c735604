/**
 * The pages the account mails link to, in Chromium: open the link from the
 * mail, fill in the form, see the outcome. Also: the token leaves the
 * address bar, no request carries a `Referer`, the CSP holds (no script
 * error), and axe finds nothing serious.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { axeSerious, browserTest, shot } from "./_browser.ts";
import {
  fastUser,
  fixtureAdmin,
  standardSchemas,
  USER_PW,
  userToken,
} from "./_auth_fixtures.ts";
import {
  account,
  FAST_MAIL,
  linkOf,
  nthMailTo,
  useSmtp,
} from "./_account_fixtures.ts";
import { startSmtp } from "./_smtp.ts";

/** Records whether any request of the page carried a `Referer`. */
function watchReferers(page: Page): string[] {
  const seen: string[] = [];
  page.on("request", (req) => {
    const referer = req.headers()["referer"];
    if (referer) seen.push(`${req.url()} ← ${referer}`);
  });
  return seen;
}

browserTest(
  "account pages: verify, reset the password, change the email from the mailed links",
  async ({ s, newPage, errors }) => {
    const smtp = await startSmtp();
    try {
      const admin = await fixtureAdmin(s);
      await standardSchemas(s, admin);
      await useSmtp(s, admin, smtp);
      const users = s.app.schemas.get("users")!;
      const u = await fastUser(s, "users", { email: "pat@example.com" });

      // Verification.
      await account(s, "users", "request-verification", {
        email: "pat@example.com",
      });
      const verify = linkOf(await nthMailTo(smtp, "pat@example.com"));
      const page = await newPage();
      const referers = watchReferers(page);
      await page.goto(verify.href);
      await page.getByRole("heading", { name: "Confirm your email" })
        .waitFor();
      assert.equal(new URL(page.url()).search, "", "the token left the URL");
      assert.deepEqual(await axeSerious(page), []);
      await page.getByRole("button", { name: "Confirm my email" }).click();
      await page.getByRole("status").getByText("Your email is verified")
        .waitFor();
      assert.equal((await users.read(u.id))?.verified, true);
      await shot(page, "account_verified");

      // Password reset.
      await account(s, "users", "request-password-reset", {
        email: "pat@example.com",
      });
      const reset = linkOf(await nthMailTo(smtp, "pat@example.com", 2));
      await page.goto(reset.href);
      await page.getByLabel("New password", { exact: true }).fill(
        "pat-new-password",
      );
      await page.getByLabel("Repeat the new password").fill("pat-other-pw");
      await page.getByRole("button", { name: "Set the new password" }).click();
      await page.getByRole("status").getByText("The two passwords differ")
        .waitFor();
      await page.getByLabel("Repeat the new password").fill(
        "pat-new-password",
      );
      assert.deepEqual(await axeSerious(page), []);
      await page.getByRole("button", { name: "Set the new password" }).click();
      await page.getByRole("status").getByText("Your password is changed")
        .waitFor();
      // Done: the form goes, the outcome stays.
      await page.locator("#account-form").waitFor({ state: "hidden" });
      await shot(page, "account_reset");
      const session = await userToken(
        s,
        "users",
        "pat@example.com",
        "pat-new-password",
      );

      // Email change: a wrong password first, then the right one.
      await account(s, "users", "request-email-change", {
        email: "pat.new@example.com",
      }, { token: session });
      const change = linkOf(await nthMailTo(smtp, "pat.new@example.com"));
      await page.goto(change.href);
      await page.getByLabel("Your password").fill(USER_PW);
      await page.getByRole("button", { name: "Change my email" }).click();
      await page.getByRole("status").getByText("the password is wrong")
        .waitFor();
      await page.getByLabel("Your password").fill("pat-new-password");
      await page.getByRole("button", { name: "Change my email" }).click();
      await page.getByRole("status").getByText("Your email is changed")
        .waitFor();
      assert.equal((await users.read(u.id))?.email, "pat.new@example.com");

      // The same link again: the page says why it cannot be used.
      await page.goto(change.href);
      await page.getByLabel("Your password").fill("pat-new-password");
      await page.getByRole("button", { name: "Change my email" }).click();
      await page.getByRole("status").getByText("invalid, used or expired")
        .waitFor();

      // A link without its token.
      await page.goto(`${s.url}/mb/auth/users/reset-password`);
      await page.getByRole("status").getByText("has no token").waitFor();

      assert.deepEqual(referers, []);
      assert.deepEqual(errors, []);
    } finally {
      await smtp.close();
    }
  },
  undefined,
  { trustProxy: true, mail: FAST_MAIL },
);
