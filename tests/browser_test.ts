/**
 * The dashboard in a real (headless) Chromium: the setup link creates the
 * first admin, the login page logs in, entities and records show up.
 * Skipped when Chromium is not installed.
 */
import { chromium } from "playwright-core";
import { assert, assertEquals, startServer } from "./_server.ts";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  },
);

Deno.test({
  name: "dashboard: setup link, login, entities and records in Chromium",
  ignore: !CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await startServer("sqlite");
    const browser = await chromium.launch({
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
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      // Setup page from the link the server prints.
      const setup = await page.goto(
        `${s.url}/mb/setup?token=${s.app.setupToken}`,
      );
      assertEquals(setup?.status(), 200);
      await page.fill("input[name=email]", "root@example.com");
      await page.fill("input[name=password]", "root-password-1");
      await page.click("button[type=submit]");
      await page.waitForSelector("text=Entities");
      assert(await page.isVisible("text=mb_admins"), "system entity listed");
      // Create an entity and a record through the API, then see them in the UI.
      const token = await s.adminToken();
      await s.request("POST", "/api/v1/schemas", {
        token,
        body: {
          name: "posts",
          type: "base",
          fields: [{ name: "title", type: "string" }],
        },
      });
      await s.request("POST", "/api/v1/entities/posts", {
        token,
        body: { title: "Hello <b>dashboard</b>" },
      });
      await page.goto(`${s.url}/mb?entity=posts`);
      await page.waitForSelector("text=Hello <b>dashboard</b>");
      await page.screenshot({ path: `${s.dataDir}/../mb_dashboard.png` }).catch(
        () => {},
      );
      // Log out, then the login page works with the admin created in setup.
      await page.click("text=Log out");
      await page.waitForSelector("text=Admin login");
      await page.fill("input[name=email]", "root@example.com");
      await page.fill("input[name=password]", "root-password-1");
      await page.click("button[type=submit]");
      await page.waitForSelector("text=Entities");
      // A wrong password shows the envelope's error.
      await page.evaluate(() => sessionStorage.clear());
      await page.goto(`${s.url}/mb/login`);
      await page.fill("input[name=email]", "root@example.com");
      await page.fill("input[name=password]", "wrong-password");
      await page.click("button[type=submit]");
      await page.waitForSelector("text=invalid identity or password");
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await s.close();
    }
  },
});
