/**
 * The client bundle (`client/dist/moonbase.js`, as npm ships it) in
 * Chromium, on a page the test server serves from `--publicDir`: a login,
 * a list and a subscription; the OAuth2 sign-in in a real popup with a
 * real OpenID provider (tests/_oidc.ts); and two tabs sharing a
 * `localStorage` session that refresh it once between them.
 *
 * @module
 */

import { browserTest, browserTestAllDbs } from "./_browser.ts";
import { assert, assertEquals } from "./_server.ts";
import { startOidc } from "./_oidc.ts";
import { adminClient, exampleEntities } from "./_client_fixtures.ts";
import { poll, ShiftedClock } from "./_wait.ts";

const root = new URL("../", import.meta.url);

/** A public dir with the bundle, a page that loads it and the OAuth2 redirect page. */
function publicDir(): string {
  const dir = Deno.makeTempDirSync({ prefix: "mb_client_page_" });
  const js = new URL("client/dist/moonbase.js", root);
  try {
    Deno.statSync(js);
  } catch {
    const b = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "client/build.ts"],
      cwd: root.pathname,
    }).outputSync();
    if (!b.success) throw new Error("Cannot build the client bundle");
  }
  Deno.copyFileSync(js, `${dir}/moonbase.js`);
  Deno.writeTextFileSync(
    `${dir}/index.html`,
    `<!doctype html><title>client</title><script type="module">
      import * as client from "/moonbase.js";
      window.client = client;
      document.title = "ready";
    </script>`,
  );
  Deno.writeTextFileSync(
    `${dir}/oauth2-redirect.html`,
    `<!doctype html><title>back</title><script type="module">
      import { completeOAuth2Redirect } from "/moonbase.js";
      completeOAuth2Redirect();
    </script>`,
  );
  return dir;
}

browserTestAllDbs(
  "client in Chromium: login, list, subscribe",
  async ({ s, newPage, errors }) => {
    await exampleEntities(s);
    const page = await newPage();
    await page.goto(`${s.url}/`);
    await page.waitForFunction("document.title === 'ready'");
    const out = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const { Moonbase, MoonbaseError } = (globalThis as any).client;
      const mb = new Moonbase("", { store: "local" });
      await mb.entity("users").create({
        email: "page@example.com",
        password: "correct-horse-1",
        name: "Page",
      });
      const { user } = await mb.auth("users").login(
        "page@example.com",
        "correct-horse-1",
      );
      const live: string[] = [];
      const stop = await mb.entity("posts").subscribe(
        "*",
        (e: { record: { title: string } }) => live.push(e.record.title),
        { expand: "author" },
      );
      await mb.entity("posts").create({ title: "from the page" });
      const page = await mb.entity("posts").list({ expand: "author" });
      const deadline = Date.now() + 10_000;
      while (live.length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      stop();
      let refused = 0;
      try {
        await mb.entity("posts").create({ title: "" });
      } catch (e) {
        refused = e instanceof MoonbaseError
          ? (e as { status: number }).status
          : -1;
      }
      const stored = JSON.parse(localStorage.getItem("moonbase_auth") ?? "{}");
      mb.close();
      return {
        user: user.email,
        titles: page.items.map((p: { title: string }) => p.title),
        author: page.items[0]?.expand?.author?.name,
        live,
        refused,
        stored: stored.token === mb.authStore.token,
      };
    });
    assertEquals(out, {
      user: "page@example.com",
      titles: ["from the page"],
      author: "Page",
      live: ["from the page"],
      refused: 400,
      stored: true,
    });
    assertEquals(errors, []);
  },
  { publicDir: publicDir(), trustProxy: true },
);

browserTest(
  "client in Chromium: OAuth2 sign-in in a popup",
  async ({ s, newPage, errors }) => {
    await exampleEntities(s);
    const redirect = `${s.url}/oauth2-redirect.html`;
    const idp = await startOidc({
      clients: [{
        client_id: "app",
        client_secret: "app-secret",
        redirect_uris: [redirect],
      }],
      accounts: { alice: { email: "alice@example.com", email_verified: true } },
    });
    try {
      const admin = await adminClient(s);
      await admin.schemas.update("users", {
        auth: {
          oauth2: {
            enabled: true,
            providers: [{
              name: "corp",
              display_name: "Corp",
              issuer: idp.issuer,
              client_id: "app",
              client_secret: "app-secret",
              scopes: ["openid", "email"],
            }],
          },
        },
      });
      admin.close();
      const page = await newPage();
      // The provider signs "alice" in without a form (tests/_oidc.ts reads
      // login_hint), as a user clicking through would.
      await page.context().route(`${idp.issuer}/auth?**`, (route) => {
        const url = new URL(route.request().url());
        url.searchParams.set("login_hint", "alice");
        return route.continue({ url: url.toString() });
      });
      await page.goto(`${s.url}/`);
      await page.waitForFunction("document.title === 'ready'");
      const popup = page.waitForEvent("popup");
      const result = page.evaluate(async (redirectUrl) => {
        // deno-lint-ignore no-explicit-any
        const { Moonbase } = (globalThis as any).client;
        const mb = new Moonbase("");
        const r = await mb.auth("users").loginOAuth2({
          provider: "corp",
          redirectUrl,
        });
        return {
          email: r.user.email,
          isNew: r.meta.is_new,
          stored: mb.authStore.token === r.token,
        };
      }, redirect);
      const win = await popup;
      await win.waitForEvent("close");
      assertEquals(await result, {
        email: "alice@example.com",
        isNew: true,
        stored: true,
      });
      assertEquals(errors, []);
    } finally {
      await idp.close();
    }
  },
  undefined,
  { publicDir: publicDir(), trustProxy: true },
);

/** The server's clock, moved on with the pages' (Playwright's). */
const tabsClock = new ShiftedClock();

browserTest(
  "client in Chromium: two tabs refresh their shared session once",
  async ({ s, newPage, errors }) => {
    await exampleEntities(s);
    const first = await newPage();
    // The tokens come due when the test moves the clocks on, not after a
    // real wait.
    const clock = first.context().clock;
    await clock.install();
    const refreshes: number[] = [];
    first.context().on("response", (r) => {
      if (r.url().endsWith("/refresh")) refreshes.push(r.status());
    });
    await first.goto(`${s.url}/`);
    await first.waitForFunction("document.title === 'ready'");
    const token = await first.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const { Moonbase } = (globalThis as any).client;
      const mb = new Moonbase("", { store: "local" });
      await mb.entity("users").create({
        email: "tabs@example.com",
        password: "correct-horse-1",
      });
      // deno-lint-ignore no-explicit-any
      (globalThis as any).mb = mb;
      return (await mb.auth("users").login(
        "tabs@example.com",
        "correct-horse-1",
      )).token;
    });
    const second = await first.context().newPage();
    await second.goto(`${s.url}/`);
    await second.waitForFunction("document.title === 'ready'");
    await second.evaluate(() => {
      // deno-lint-ignore no-explicit-any
      const w = globalThis as any;
      w.mb = new w.client.Moonbase("", { store: "local" });
    });
    const tokenIn = (p: typeof first) =>
      // deno-lint-ignore no-explicit-any
      p.evaluate(() => (globalThis as any).mb.authStore.token as string);
    assertEquals(
      await tokenIn(second),
      token,
      "the second tab has the session",
    );
    // Both tabs' timers come due together; one refreshes. (tokenTtl 600 s:
    // due a quarter of the lifetime before expiry, 450 s after the login.)
    tabsClock.advance(450_000);
    await clock.fastForward(450_000);
    await poll("both tabs hold a new token", async () => {
      const [a, b] = [await tokenIn(first), await tokenIn(second)];
      return a !== token && a === b && a !== "" ? a : undefined;
    }, { deadline: 15_000 });
    // One refresh issued the token both tabs hold. The other tab waits for
    // the Web Lock and then takes it; but Chromium may show it that tab's
    // write a moment after the lock, and then its own refresh of the old
    // token is refused (401) and it takes the token once it shows.
    assertEquals(
      refreshes.filter((status) => status === 200).length,
      1,
      `one refresh for both tabs: ${refreshes}`,
    );
    assert(refreshes.every((status) => status === 200 || status === 401));
    const works = await second.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const mb = (globalThis as any).mb;
      await mb.entity("users").list();
      return mb.authStore.isValid;
    });
    assert(works, "the shared token works");
    assertEquals(errors, []);
  },
  undefined,
  {
    publicDir: publicDir(),
    trustProxy: true,
    tokenTtl: 600,
    clock: tabsClock.now,
  },
);
