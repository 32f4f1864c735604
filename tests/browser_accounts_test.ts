/**
 * The dashboard's account pages in Chromium, against a real SMTP server
 * (tests/_smtp.ts) and a local OpenID issuer: Settings saved (the SMTP
 * password write-only) and the test mail accepted, then refused (the 502's
 * reason shown); API keys made (shown once, working), listed, deleted
 * (refused at once); a user's verification and password reset mail sent
 * from their record (received by the SMTP server); impersonation of a
 * user (token shown once with its expiry, acting as the user); the Auth tab's OTP/MFA/TOTP switches and a
 * provider saved (its secret write-only: "set"), the issuer checked through
 * the server, and the template preview (subject rendered, HTML in a
 * sandboxed frame). Each page: axe, no page error, fits 390 px, a
 * screenshot at 1280 and 390 px.
 *
 * One server and one login for the three parts (API keys, the Auth tab,
 * then Settings): each part's entities are deleted and the settings put
 * back to their defaults before the next one, so each sees the server as it
 * would alone; within a part the steps run in order and build on each
 * other.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import {
  axeSerious,
  type BrowserCase,
  browserTest,
  scrollWidth,
  shot,
} from "./_browser.ts";
import { dropEntities, painted, sharedLogin } from "./_browser_pages.ts";
import type { TestServer } from "./_server.ts";
import { defaultSettings } from "../lib/settings/types.ts";
import { FAST_MAIL } from "./_account_fixtures.ts";
import { startSmtp } from "./_smtp.ts";
import { claimsOf, fastUser } from "./_auth_fixtures.ts";

/** axe, no page error, no overflow, a screenshot: at 1280 and 390 px. */
async function checkBoth(
  page: Page,
  errors: string[],
  name: string,
): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.evaluate("scrollTo(0, 0)");
    await painted(page);
    assert.deepEqual(await axeSerious(page), [], `${name} at ${width}`);
    assert.equal(await scrollWidth(page), width, `${name} fits ${width} px`);
    assert.deepEqual(errors, [], `${name} at ${width}`);
    await shot(page, name);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function api(
  s: TestServer,
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
) {
  return await s.request(method, `/api/v1${path}`, { token, body });
}

/** A local OpenID issuer serving only its discovery document. */
function localIssuer(): { base: string; close: () => Promise<void> } {
  const ac = new AbortController();
  let base = "";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    () =>
      Response.json({
        issuer: base,
        authorization_endpoint: `${base}/auth`,
        token_endpoint: `${base}/token`,
        jwks_uri: `${base}/jwks`,
      }),
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  return {
    base,
    close: async () => {
      ac.abort();
      await server.finished;
    },
  };
}

/** settings: save, test mail accepted and refused */
async function settingsSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const smtp = await startSmtp();
  try {
    const page = await adminPage();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor();
    assert.equal(await page.title(), "Settings · Moonbase");
    await page.getByText("Mail is not set up").waitFor();
    await checkBoth(page, errors, "settings");

    await page.getByLabel(/^Name/).fill("Moon Notes");
    await page.getByLabel("Sender address").fill("noreply@example.com");
    await page.getByLabel("Host").fill("127.0.0.1");
    await page.getByLabel(/^Port/).fill(String(smtp.port));
    await page.getByLabel("Security").selectOption("none");
    await page.getByLabel(/^Password/).fill("smtp-secret");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.locator(".toast", { hasText: "Settings saved" }).waitFor();
    await page.getByText("A password is saved (never shown)").waitFor();
    assert.equal(await page.getByLabel(/^Password/).inputValue(), "");

    const token = await s.adminToken();
    const saved = await api(s, "GET", "/sys/settings", token);
    assert.equal(saved.data.app.name, "Moon Notes");
    assert.equal(saved.data.mail.smtp.port, smtp.port);
    assert.equal(saved.data.mail.smtp.password, "");
    assert.equal(saved.data.mail.smtp.password_set, true);
    assert.equal(
      (await s.app.settings.read()).mail.smtp.password,
      "smtp-secret",
    );

    // A bad port is refused next to its input.
    await page.getByLabel(/^Port/).fill("70000");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.locator(".field.invalid", { hasText: "Port" }).waitFor();
    await page.getByLabel(/^Port/).fill(String(smtp.port));
    await page.getByText("Unsaved changes").waitFor({ state: "detached" });
    await page.getByText("Not saved").waitFor({ state: "detached" });

    // Test mail: accepted.
    await page.getByLabel("To", { exact: true }).fill("ops@example.com");
    await page.getByRole("button", { name: "Send test mail" }).click();
    await page.getByText(
      "Sent: the SMTP server accepted the test mail to ops@example.com.",
    ).waitFor();
    const [mail] = await smtp.waitFor(1);
    assert.deepEqual(mail.to, ["ops@example.com"]);
    assert.equal(mail.subject, "Moon Notes: test mail");

    // Test mail: refused; the server's reason is shown.
    smtp.refuse("550 No such user here");
    await page.getByRole("button", { name: "Send test mail" }).click();
    const refusal = page.locator(".test-mail .error-box");
    await refusal.waitFor();
    const text = await refusal.innerText();
    assert.match(text, /^Cannot send test mail: /);
    assert.match(text, /550 No such user here/);
    await checkBoth(page, errors, "settings_test_mail");
  } finally {
    await smtp.close();
  }
}

/** API keys: made and shown once, listed, deleted; impersonation */
async function apiKeysSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const token = await s.adminToken();
  const made = await api(s, "POST", "/schemas", token, {
    name: "users",
    type: "auth",
    fields: [{ name: "name", type: "string" }],
    rules: { get: { mode: "auth", expr: "" } },
  });
  assert.equal(made.status, 201, made.text);
  const ada = await fastUser(s, "users", { email: "ada@example.com" });

  const page = await adminPage();
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
  assert.equal(await page.title(), "API keys · Moonbase");
  await page.getByText("No API keys yet.").waitFor();
  await checkBoth(page, errors, "api_keys");

  // A user that does not exist is named next to its input.
  await page.getByLabel(/^Name/).fill("nightly export");
  await page.getByLabel("Entity").selectOption("users");
  await page.getByLabel(/^User/).fill("nobody@example.com");
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByText("No users user has the email nobody@example.com.")
    .waitFor();

  await page.getByLabel(/^User/).fill("ada@example.com");
  await page.getByRole("button", { name: "Create key" }).click();
  const shown = page.getByLabel("API key", { exact: true });
  await shown.waitFor();
  const key = await shown.inputValue();
  assert.match(key, /^mbk_[0-9a-f]{32}_/);
  await page.getByText("Copy it now: it is shown this once").waitFor();
  await page.getByRole("cell", { name: "nightly export", exact: true })
    .waitFor();
  await page.getByRole("link", { name: "ada@example.com" }).waitFor();
  await checkBoth(page, errors, "api_keys_created");
  assert.equal(
    (await api(s, "GET", `/entities/users/${ada.id}`, key)).status,
    200,
  );

  // Done: the key is gone from the page, and a reload never shows it.
  await page.getByRole("button", { name: "Done, hide it" }).click();
  assert.equal(await shown.count(), 0);
  await page.reload();
  await page.getByRole("cell", { name: "nightly export", exact: true })
    .waitFor();
  assert.ok(!(await page.content()).includes(key.slice(4, 40)));

  // Delete, confirmed: refused at once.
  await page.getByRole("button", { name: "Delete API key nightly export" })
    .click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete key" })
    .click();
  await page.getByText("No API keys yet.").waitFor();
  assert.equal(
    (await api(s, "GET", `/entities/users/${ada.id}`, key)).status,
    401,
  );

  // Ada's record: account mail through the real SMTP server.
  await page.goto(`${s.url}/mb/entities/users/records/${ada.id}`);
  await page.getByRole("heading", { name: "Account" }).waitFor();
  await page.getByText("Mail is not set up").waitFor();
  await checkBoth(page, errors, "user_account");
  const smtp = await startSmtp();
  try {
    const set = await api(s, "PATCH", "/sys/settings", token, {
      mail: {
        from: { address: "noreply@example.com" },
        smtp: { host: "127.0.0.1", port: smtp.port, security: "none" },
      },
    });
    assert.equal(set.status, 200, set.text);
    await page.reload();
    await page.getByRole("heading", { name: "Account" }).waitFor();
    await page.getByRole("button", { name: "Send verification mail" })
      .click();
    await page.locator(".toast", {
      hasText: "Verification mail queued for ada@example.com",
    }).waitFor();
    await page.getByRole("button", { name: "Send password reset" }).click();
    await page.locator(".toast", {
      hasText: "Password reset mail queued for ada@example.com",
    }).waitFor();
    const mails = await smtp.waitFor(2, 20_000);
    assert.deepEqual(
      mails.map((m) => m.to).flat(),
      ["ada@example.com", "ada@example.com"],
    );
    const subjects = mails.map((m) => m.subject).sort();
    assert.match(subjects[0], /^Reset your .* password$/);
    assert.match(subjects[1], /^Verify your .* email$/);
    assert.match(
      mails.find((m) => m.subject.startsWith("Verify"))!.text,
      /\/mb\/auth\/users\/confirm-verification\?token=/,
    );
  } finally {
    await smtp.close();
  }

  // Impersonate Ada.
  await page.getByLabel(/^For/).selectOption("600");
  await page.getByRole("button", { name: "Impersonate" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByText(/acts as ada@example.com for 10 minutes/).waitFor();
  await dialog.getByRole("button", { name: "Impersonate" }).click();
  const tokenInput = page.getByLabel("Token", { exact: true });
  await tokenInput.waitFor();
  const imp = await tokenInput.inputValue();
  await page.getByText("Anyone holding this token acts as ada@example.com")
    .waitFor();
  const claims = claimsOf(imp) as unknown as Record<string, unknown>;
  assert.equal(claims.sub, ada.id);
  assert.ok(typeof claims.imp === "string");
  const shownExpiry = await page.locator(".impersonate-warning time")
    .getAttribute("datetime");
  assert.equal(
    Date.parse(shownExpiry!) / 1000,
    claims.exp,
    "the expiry shown is the token's",
  );
  assert.ok(Number(claims.exp) - Number(claims.iat) <= 600);
  assert.equal(
    (await api(s, "GET", `/entities/users/${ada.id}`, imp)).status,
    200,
  );
  await checkBoth(page, errors, "user_impersonated");

  // "Create API key" on the record fills the new-key form in.
  await page.getByRole("button", { name: "Done, hide it" }).click();
  await page.getByRole("link", { name: "Create API key" }).click();
  await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
  assert.equal(await page.getByLabel("Entity").inputValue(), "users");
  assert.equal(
    await page.getByLabel(/^User/).inputValue(),
    ada.id,
  );
  assert.deepEqual(errors, []);
}

/** Auth tab: methods, a provider (secret write-only, issuer checked), template preview */
async function authTabSteps(
  { s, adminPage, errors }: BrowserCase,
): Promise<void> {
  const idp = localIssuer();
  try {
    const token = await s.adminToken();
    const made = await api(s, "POST", "/schemas", token, {
      name: "members",
      type: "auth",
      fields: [{ name: "nickname", type: "string" }],
    });
    assert.equal(made.status, 201, made.text);
    await api(s, "PATCH", "/sys/settings", token, {
      app: { name: "Moon Notes" },
    });

    const page = await adminPage();
    await page.goto(`${s.url}/mb/entities/members`);
    await page.getByRole("link", { name: "Auth", exact: true }).click();
    await page.getByRole("heading", { name: "Sign-in methods" }).waitFor();
    assert.equal(await page.title(), "members · Auth · Moonbase");
    await checkBoth(page, errors, "auth_tab");

    await page.getByLabel("Allow sign-in by a code sent by mail").check();
    await page.getByLabel("Code length (digits)").fill("8");
    await page.getByLabel("Allow authenticator apps (TOTP)").check();
    await page.getByLabel("Require two methods for everyone (MFA)").check();
    await page.getByLabel("Allow sign-in with the providers below").check();

    // A provider: its issuer checked through the server.
    await page.getByRole("button", { name: "+ Add provider" }).click();
    const panel = page.locator("fieldset.provider-panel").last();
    await panel.getByLabel(/^Name/).fill("corp");
    await panel.getByLabel("Display name").fill("Corp SSO");
    await panel.getByLabel("Issuer URL").fill(idp.base);
    await panel.getByLabel("Client id").fill("moon-client");
    await panel.getByLabel("Client secret").fill("very-secret-value");
    await panel.getByLabel("Scopes").fill("openid email");
    await panel.getByRole("button", { name: "Check issuer" }).click();
    await panel.getByText("Discovery works").waitFor();
    await panel.getByText(`${idp.base}/token`).waitFor();

    // A failing issuer says why.
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = (l.addr as Deno.NetAddr).port;
    l.close();
    await panel.getByLabel("Issuer URL").fill(`http://127.0.0.1:${closed}`);
    await panel.getByRole("button", { name: "Check issuer" }).click();
    await panel.locator(".error-box", {
      hasText: /^Cannot check the issuer: .*could not be reached/,
    }).waitFor();
    await panel.getByLabel("Issuer URL").fill(idp.base);

    // The template preview renders the subject with sample values.
    await page.getByRole("button", { name: "Sign-in code" }).click();
    await page.getByLabel("Subject").fill("Your {APP_NAME} code: {CODE}");
    await page.locator(".preview-subject", {
      hasText: "Your Moon Notes code: 12345678",
    }).waitFor();
    await page.getByRole("button", { name: "Verification" }).click();
    await page.getByLabel("Subject").fill("Welcome, {EMAIL}");
    await page.getByLabel("HTML body").fill(
      '<p>Hi {EMAIL}</p><a href="{ACTION_URL}">verify</a><img src="x" onerror="parent.document.title=\'pwned\'">',
    );
    await page.locator(".preview-subject", {
      hasText: "Welcome, ada@example.com",
    }).waitFor();
    await page.locator(".preview-text", {
      hasText:
        `http://localhost:7070/mb/auth/members/confirm-verification?token=sample-token`,
    }).waitFor();
    const frame = page.locator("iframe.preview-html");
    assert.equal(await frame.getAttribute("sandbox"), "");
    const srcdoc = (await frame.getAttribute("srcdoc"))!;
    assert.match(srcdoc, /<p>Hi ada@example\.com<\/p>/);
    assert.equal(
      await page.frameLocator("iframe.preview-html").locator("p").innerText(),
      "Hi ada@example.com",
    );
    // The frame is sandboxed: its handler was blocked (Chromium says so
    // on the console), and the page's title is untouched.
    const blocked = (e: string) =>
      /Blocked script execution in 'about:srcdoc'.*sandboxed/.test(e);
    for (let i = 0; i < 50 && !errors.some(blocked); i++) {
      await page.waitForTimeout(100);
    }
    assert.ok(errors.some(blocked), errors.join("\n"));
    errors.splice(0, errors.length, ...errors.filter((e) => !blocked(e)));
    assert.equal(await page.title(), "members · Auth · Moonbase");
    await checkBoth(page, errors, "auth_tab_edited");

    await page.getByRole("button", { name: "Save auth" }).click();
    await page.locator(".toast", { hasText: "Auth of members saved" })
      .waitFor();
    await panel.getByText("secret set").waitFor();
    assert.equal(await panel.getByLabel("Client secret").inputValue(), "");

    const got = await api(s, "GET", "/schemas/members", token);
    const auth = got.data.auth;
    assert.deepEqual(auth.otp, { enabled: true, duration: 180, length: 8 });
    assert.equal(auth.totp.enabled, true);
    assert.equal(auth.mfa.enabled, true);
    assert.equal(auth.oauth2.enabled, true);
    assert.deepEqual(auth.oauth2.providers, [{
      name: "corp",
      display_name: "Corp SSO",
      issuer: idp.base,
      preset: "",
      client_id: "moon-client",
      client_secret: "",
      client_secret_set: true,
      scopes: ["openid", "email"],
    }]);
    assert.equal(auth.templates.verification.subject, "Welcome, {EMAIL}");
    assert.equal(auth.templates.otp.subject, "Your {APP_NAME} code: {CODE}");
    const stored = s.app.schemas.get("members")!.schema.auth!;
    assert.equal(
      stored.oauth2.providers[0].client_secret,
      "very-secret-value",
    );

    // Saved again without typing the secret: it stays.
    await page.getByLabel("Code length (digits)").fill("6");
    await page.getByRole("button", { name: "Save auth" }).click();
    await page.locator(".toast", { hasText: "Auth of members saved" })
      .waitFor();
    await page.getByText("Unsaved changes").waitFor({ state: "detached" });
    const again = s.app.schemas.get("members")!.schema.auth!;
    assert.equal(again.otp.length, 6);
    assert.equal(
      again.oauth2.providers[0].client_secret,
      "very-secret-value",
    );

    // A refused value is marked on its input.
    await page.getByLabel("Code length (digits)").fill("99");
    await page.getByRole("button", { name: "Save auth" }).click();
    await page.locator(".field.invalid", { hasText: "Code length" })
      .waitFor();
    await checkBoth(page, errors, "auth_tab_saved");
  } finally {
    await idp.close();
  }
}

/** Puts the settings back to a new server's. */
async function defaultsAgain(s: TestServer): Promise<void> {
  const r = await api(
    s,
    "PATCH",
    "/sys/settings",
    await s.adminToken(),
    defaultSettings(),
  );
  assert.equal(r.status, 200, r.text);
}

browserTest(
  "account pages of the dashboard: API keys and impersonation, the Auth tab, settings and test mail",
  async (c) => {
    const parts = { ...c, adminPage: sharedLogin(c) };
    await apiKeysSteps(parts);
    await dropEntities(c.s, "users");
    await defaultsAgain(c.s);
    await authTabSteps(parts);
    await dropEntities(c.s, "members");
    await defaultsAgain(c.s);
    await settingsSteps(parts);
  },
  undefined,
  { mail: FAST_MAIL },
);
