/**
 * The small pages the mailed links open, served without an admin login:
 * `/mb/auth/<entity>/confirm-verification`, `/reset-password` and
 * `/confirm-email-change` (`?token=…`). Plain server-rendered HTML with
 * one form; a script of its own (`/mb/assets/account.js`, no inline script:
 * the pages' CSP allows scripts from the server only) posts it to the
 * matching `confirm-*` API route with `fetch` and shows the outcome.
 *
 * The token stays out of every other request: the script reads it from the
 * address, then takes it out of the address bar (history), and the pages
 * send `Referrer-Policy: no-referrer` (plus the `<meta>`). Every value
 * written into the HTML is escaped.
 *
 * @module
 */

import { escapeHtml } from "../mail/template.ts";

/** The pages, by their last path segment. */
export type AccountPageName =
  | "confirm-verification"
  | "reset-password"
  | "confirm-email-change";

interface PageText {
  title: string;
  intro: string;
  /** The API route the form posts to (`confirm-…`). */
  route: string;
  /** Password inputs: none, the current one, or a new one typed twice. */
  password: "none" | "current" | "new";
  button: string;
  done: string;
}

const PAGES: Record<AccountPageName, PageText> = {
  "confirm-verification": {
    title: "Confirm your email",
    intro: "Confirm that this email address is yours.",
    route: "confirm-verification",
    password: "none",
    button: "Confirm my email",
    done: "Your email is verified. You can close this page.",
  },
  "reset-password": {
    title: "Choose a new password",
    intro:
      "Choose a new password for your account. Every device signed in to it will be signed out.",
    route: "confirm-password-reset",
    password: "new",
    button: "Set the new password",
    done:
      "Your password is changed. Sign in with the new one; you can close this page.",
  },
  "confirm-email-change": {
    title: "Confirm your new email",
    intro:
      "Enter your password to make this address the email of your account. Every device signed in to it will be signed out.",
    route: "confirm-email-change",
    password: "current",
    button: "Change my email",
    done:
      "Your email is changed. Sign in with the new address; you can close this page.",
  },
};

/** True when `name` is one of the pages. */
export function isAccountPage(name: string): name is AccountPageName {
  return Object.hasOwn(PAGES, name);
}

/** The headers of the pages and their assets. */
export const ACCOUNT_PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

function passwordInputs(kind: PageText["password"]): string {
  if (kind === "none") return "";
  if (kind === "current") {
    return `<label for="password">Your password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
`;
  }
  return `<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required>
<label for="password2">Repeat the new password</label>
<input id="password2" name="password2" type="password" autocomplete="new-password" minlength="8" required>
`;
}

/**
 * The HTML of a page for the auth entity `entity` of the app `appName`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { accountPageHtml } from "moonbase/lib/auth/account_pages.ts";
 * const html = accountPageHtml("reset-password", "users", "<Shop>");
 * assert.match(html, /data-api="\/api\/v1\/auth\/users\/confirm-password-reset"/);
 * assert.match(html, /&lt;Shop&gt;/);
 * assert.doesNotMatch(html, /<Shop>/);
 * ```
 */
export function accountPageHtml(
  page: AccountPageName,
  entity: string,
  appName: string,
): string {
  const p = PAGES[page];
  const api = `/api/v1/auth/${encodeURIComponent(entity)}/${p.route}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(p.title)} · ${escapeHtml(appName)}</title>
<link rel="stylesheet" href="/mb/assets/account.css">
<script src="/mb/assets/account.js" defer></script>
</head>
<body>
<main>
<p class="app">${escapeHtml(appName)}</p>
<h1>${escapeHtml(p.title)}</h1>
<p>${escapeHtml(p.intro)}</p>
<form id="account-form" data-api="${escapeHtml(api)}" data-done="${
    escapeHtml(p.done)
  }">
${passwordInputs(p.password)}<button type="submit">${
    escapeHtml(p.button)
  }</button>
</form>
<p id="status" role="status" aria-live="polite"></p>
<noscript><p>This page needs JavaScript to send the form.</p></noscript>
</main>
</body>
</html>
`;
}

/** The pages' script (served as `/mb/assets/account.js`). */
export const ACCOUNT_PAGE_SCRIPT = `"use strict";
(function () {
  var form = document.getElementById("account-form");
  var status = document.getElementById("status");
  if (!form || !status) return;
  var token = new URLSearchParams(location.search).get("token") || "";
  // Out of the address bar and the history: only the form's request sends it.
  if (token) history.replaceState(null, "", location.pathname);
  function show(text, kind) {
    status.textContent = text;
    status.className = kind;
  }
  if (!token) {
    form.hidden = true;
    show("This link has no token: open the link from the mail again.", "error");
    return;
  }
  var button = form.querySelector("button");
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var body = { token: token };
    var password = form.elements.namedItem("password");
    var again = form.elements.namedItem("password2");
    if (password) body.password = password.value;
    if (again && again.value !== password.value) {
      show("The two passwords differ.", "error");
      return;
    }
    button.disabled = true;
    show("Sending…", "");
    fetch(form.getAttribute("data-api"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      credentials: "omit",
      referrerPolicy: "no-referrer",
    }).then(function (res) {
      if (res.status === 204) {
        form.hidden = true;
        show(form.getAttribute("data-done"), "ok");
        return;
      }
      return res.json().catch(function () { return null; }).then(function (env) {
        show(env && env.error ? env.error : "Cannot send the form (HTTP " + res.status + ").", "error");
        button.disabled = false;
      });
    }, function () {
      show("Cannot reach the server: check the connection and try again.", "error");
      button.disabled = false;
    });
  });
})();
`;

/** The pages' style sheet (served as `/mb/assets/account.css`). */
export const ACCOUNT_PAGE_STYLE =
  `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; padding: 2rem 1rem; background: Canvas; color: CanvasText; }
main { max-width: 26rem; margin: 0 auto; }
.app { font-weight: 600; opacity: 0.8; margin: 0; }
h1 { font-size: 1.5rem; margin: 0.25rem 0 1rem; }
[hidden] { display: none !important; }
form { display: grid; gap: 0.5rem; margin: 1.5rem 0 1rem; }
label { font-weight: 600; }
input { font: inherit; padding: 0.5rem; border: 1px solid GrayText; border-radius: 4px; }
button { font: inherit; padding: 0.6rem 1rem; margin-top: 0.5rem; border: 0; border-radius: 4px; background: #2454c5; color: #fff; cursor: pointer; }
button:disabled { opacity: 0.6; cursor: default; }
#status.ok { color: #17703a; font-weight: 600; }
#status.error { color: #b3261e; font-weight: 600; }
@media (prefers-color-scheme: dark) {
  #status.ok { color: #6fd396; }
  #status.error { color: #ff8a80; }
}
`;
