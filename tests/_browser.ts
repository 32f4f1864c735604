/**
 * Browser test harness for the dashboard: Debian's Chromium through
 * `playwright-core` (never a downloaded browser), a logged-in page on a
 * test server, axe-core checks and screenshots.
 *
 * Screenshots go to `$MB_SHOTS_DIR` (default `<tmp>/moonbase-shots`), named
 * `<name>_<width>.png`.
 *
 * @module
 */

import axe from "axe-core";
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Page,
} from "playwright-core";
import type { AppConfig } from "../lib/config.ts";
import { DATABASES, startServer, type TestServer } from "./_server.ts";

/** The Chromium binary, or undefined when none is installed. */
export const CHROMIUM: string | undefined = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});

/** Where screenshots are written. */
export const SHOTS_DIR: string = Deno.env.get("MB_SHOTS_DIR") ??
  `${Deno.env.get("TMPDIR") ?? "/tmp"}/moonbase-shots`;

/**
 * The database whose run takes the screenshots of a test that runs on
 * both: the pages are the same, the other run would only overwrite them.
 */
export const SHOTS_DB: "sqlite" | "postgres" = DATABASES[0] ?? "sqlite";

/** The two widths every page must work at. */
export const WIDTHS = [1280, 390] as const;

/** Launches headless Chromium with the flags this workplace needs. */
export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}

/**
 * The test file's one Chromium: launched at the first browser test, shared
 * by the file's tests (each gets its own browser contexts, i.e. its own
 * storage), relaunched if it went away, closed after the file's last
 * browser test (`browserTest` counts them). When some of them do not run
 * (`--filter`), it stays open until the test process ends, which ends it.
 */
let shared: Promise<Browser> | undefined;
/** Browser tests registered in this file, and how many have finished. */
let registered = 0;
let finished = 0;

async function sharedBrowser(): Promise<Browser> {
  const running = await shared?.catch(() => undefined);
  if (running?.isConnected()) return running;
  shared = launch();
  return await shared;
}

async function closeShared(): Promise<void> {
  const running = await shared?.catch(() => undefined);
  shared = undefined;
  // Already gone (it crashed): nothing to close.
  await running?.close().catch(() => {});
}

/** What a browser test case gets. */
export interface BrowserCase {
  s: TestServer;
  /** The file's shared Chromium (close only the contexts you open). */
  browser: Browser;
  /** A fresh page of `width` px (default 1280), with errors collected. */
  newPage(width?: number): Promise<Page>;
  /** A fresh page already logged in as the test admin. */
  adminPage(width?: number): Promise<Page>;
  /** Uncaught page errors and console errors seen so far (should stay []). */
  errors: string[];
}

/**
 * Databases of a page-level browser test: SQLite, or both with
 * `MB_BROWSER_ALL_DBS=1`. The pages talk to the same API on both databases
 * (its tests run on both); `browserTestAllDbs` flows (first run, session,
 * the end-to-end tour) always run on both.
 */
export const PAGE_DBS: readonly ("sqlite" | "postgres")[] =
  Deno.env.get("MB_BROWSER_ALL_DBS") === "1" ? DATABASES : ["sqlite"];

/**
 * Registers one `Deno.test` per database of `dbs` (default `PAGE_DBS`, as
 * `MB_TEST_DB` allows) that gets a server and the file's browser; skipped
 * without Chromium. `config` overrides the server's configuration. The
 * contexts a case opens are closed when it ends, before its server.
 */
export function browserTest(
  name: string,
  fn: (c: BrowserCase) => Promise<void>,
  dbs: readonly ("sqlite" | "postgres")[] = PAGE_DBS,
  config: AppConfig = {},
): void {
  for (const db of DATABASES.filter((d) => dbs.includes(d))) {
    if (CHROMIUM) registered++;
    Deno.test({
      name: `${name} [${db}]`,
      ignore: !CHROMIUM,
      sanitizeOps: false,
      sanitizeResources: false,
      async fn() {
        let s: TestServer | undefined;
        const contexts: BrowserContext[] = [];
        try {
          s = await startServer(db, config);
          const server = s;
          const browser = await sharedBrowser();
          const errors: string[] = [];
          const watch = (page: Page) => {
            page.setDefaultTimeout(10_000);
            page.on("pageerror", (e) => errors.push(`pageerror: ${e}`));
            page.on("console", (m) => {
              // A failed fetch (e.g. an expected 4xx) logs a console error;
              // only script errors count.
              if (
                m.type() === "error" &&
                !/Failed to load resource/.test(m.text())
              ) errors.push(`console: ${m.text()}`);
            });
          };
          const newPage = async (width = 1280, session?: string) => {
            // One context per page (own storage); tabs it opens share it.
            const context = await browser.newContext({
              viewport: { width, height: 900 },
              storageState: session === undefined ? undefined : {
                cookies: [],
                origins: [{
                  origin: server.url,
                  localStorage: [{ name: SESSION_KEY, value: session }],
                }],
              },
            });
            contexts.push(context);
            context.on("page", watch);
            return await context.newPage();
          };
          await fn({
            s: server,
            browser,
            errors,
            newPage: (width) => newPage(width),
            adminPage: async (width = 1280) => {
              // Stored as a login through the form stores it (that form has
              // tests of its own), without loading it for every page.
              const page = await newPage(width, await adminSession(server));
              await page.goto(`${server.url}/mb`);
              await page.locator(".topbar").waitFor();
              return page;
            },
          });
        } finally {
          // Closed, their pages' streams and timers end before the server's.
          // (One that failed to close went with a crashed browser.)
          await Promise.all(contexts.map((c) => c.close().catch(() => {})));
          if (++finished === registered) await closeShared();
          await s?.close();
        }
      },
    });
  }
}

/** `browserTest` on SQLite and PostgreSQL (as `MB_TEST_DB` allows). */
export function browserTestAllDbs(
  name: string,
  fn: (c: BrowserCase) => Promise<void>,
  config: AppConfig = {},
): void {
  browserTest(name, fn, DATABASES, config);
}

/** The `localStorage` key of the dashboard's session (dashboard/src/mb.ts). */
const SESSION_KEY = "mb_admin_session";

/**
 * A session of the test admin as the dashboard stores it after a login
 * (`{ token, user }`), with a token of its own (a page may revoke it).
 */
async function adminSession(s: TestServer): Promise<string> {
  await s.adminToken(); // creates the admin
  const admins = s.app.schemas.get("mb_admins")!;
  const row = await admins.queryFromCols("admin@example.com", ["email"]);
  const { token } = await s.app.sessions.issue(admins, row!);
  const user = await s.request("GET", `/api/v1/sys/admins/${row!.id}`, {
    token,
  });
  if (user.status !== 200) {
    throw new Error(`Cannot read the test admin: ${user.status} ${user.text}`);
  }
  return JSON.stringify({ token, user: user.data });
}

/** Logs a page in as the test admin through the login form. */
export async function loginAs(page: Page, s: TestServer): Promise<void> {
  await s.adminToken(); // creates the admin
  await page.goto(`${s.url}/mb/login`);
  await page.getByLabel("Email").fill("admin@example.com");
  await page.getByLabel("Password").fill(s.adminPassword);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator(".topbar").waitFor();
}

/** One axe-core finding. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Runs axe-core on the page and returns its serious and critical
 * violations (assert they are `[]`).
 */
export async function axeSerious(page: Page): Promise<AxeViolation[]> {
  const source = (axe as unknown as { source: string }).source;
  if (!(await page.evaluate(() => "axe" in globalThis))) {
    // CSP forbids inline scripts on /mb: evaluate the source instead.
    await page.evaluate(source);
  }
  const found = await page.evaluate(async () => {
    const g = globalThis as unknown as {
      axe: {
        run: (opts: unknown) => Promise<{
          violations: {
            id: string;
            impact: string | null;
            help: string;
            nodes: { target: unknown[] }[];
          }[];
        }>;
      };
    };
    const r = await g.axe.run({ resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => JSON.stringify(n.target)),
    }));
  });
  return [
    ...found.filter((v) => v.impact === "serious" || v.impact === "critical"),
    ...await placeholderOnly(page),
  ];
}

/**
 * Form controls whose only name is their placeholder (axe accepts that; a
 * placeholder vanishes as soon as something is typed): a label, an
 * `aria-label`, `aria-labelledby` or a `title` is required.
 */
async function placeholderOnly(page: Page): Promise<AxeViolation[]> {
  const nodes = await page.evaluate(() => {
    type El = {
      type?: string;
      outerHTML: string;
      getAttribute(n: string): string | null;
      labels?: { length: number } | null;
      getClientRects(): { length: number };
    };
    const doc = (globalThis as unknown as {
      document: {
        querySelectorAll(s: string): Iterable<El>;
      };
    }).document;
    const out: string[] = [];
    for (const el of doc.querySelectorAll("input, select, textarea")) {
      if (el.type === "hidden" || el.getClientRects().length === 0) continue;
      const named = ["aria-label", "aria-labelledby", "title"].some((a) =>
        (el.getAttribute(a) ?? "").trim() !== ""
      ) || (el.labels?.length ?? 0) > 0;
      if (!named) {
        out.push(el.outerHTML.slice(0, 120));
      }
    }
    return out;
  });
  return nodes.length
    ? [{
      id: "placeholder-only-name",
      impact: "serious",
      help: "Form controls need a label, not only a placeholder",
      nodes: nodes.slice(0, 5),
    }]
    : [];
}

/** Saves a full-page screenshot as `<name>_<width>.png` in SHOTS_DIR. */
export async function shot(page: Page, name: string): Promise<string> {
  await Deno.mkdir(SHOTS_DIR, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  const path = `${SHOTS_DIR}/${name}_${width}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The page's document width (to check that nothing overflows at 390 px). */
export function scrollWidth(page: Page): Promise<number> {
  return page.evaluate(() =>
    (globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
    }).document.documentElement.scrollWidth
  );
}
