import assert from "node:assert/strict";
import { FETCH_LIMITS } from "./fetch.ts";
import { KeySets } from "./id_token.ts";
import { identityOf } from "./identity.ts";
import { PRESETS } from "./presets.ts";
import type { Endpoints, Identity } from "./types.ts";

/** GitHub's and Discord's user APIs, answering what a case sets. */
async function withApi(
  routes: Record<string, unknown>,
  run: (api: string, seen: string[]) => Promise<void>,
): Promise<void> {
  const seen: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (req) => {
      const path = new URL(req.url).pathname;
      seen.push(`${path} ${req.headers.get("authorization")}`);
      return Object.hasOwn(routes, path)
        ? Response.json(routes[path])
        : Response.json({ message: "Not Found" }, { status: 404 });
    },
  );
  try {
    await run(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

function identity(
  preset: "github" | "discord",
  api: string,
): Promise<Identity> {
  const endpoints = { ...(PRESETS[preset] as Endpoints), api };
  return identityOf({ accessToken: "at-1", idToken: "" }, {
    config: {
      name: preset,
      display_name: "",
      issuer: "",
      preset,
      client_id: "c",
      client_secret: "s",
      scopes: [],
    },
    endpoints,
    nonce: "",
    now: Date.now(),
    keySets: new KeySets(FETCH_LIMITS),
    limits: FETCH_LIMITS,
  });
}

Deno.test("GitHub: the primary address, verified only when GitHub says so", async () => {
  const user = {
    id: 583231,
    login: "octocat",
    name: "The Octocat",
    avatar_url: "https://avatars.githubusercontent.com/u/583231",
    email: "public@example.com",
  };
  await withApi({
    "/user": user,
    "/user/emails": [
      { email: "other@example.com", primary: false, verified: true },
      { email: "Octo@Example.com", primary: true, verified: true },
    ],
  }, async (api, seen) => {
    assert.deepEqual(await identity("github", api), {
      issuer: "https://github.com",
      subject: "583231",
      email: "octo@example.com",
      emailVerified: true,
      name: "The Octocat",
      avatar: "https://avatars.githubusercontent.com/u/583231",
    });
    assert.ok(seen.every((s) => s.endsWith(" Bearer at-1")));
  });
  await withApi({
    "/user": user,
    "/user/emails": [{
      email: "octo@example.com",
      primary: true,
      verified: false,
    }],
  }, async (api) => {
    const id = await identity("github", api);
    assert.equal(id.email, "octo@example.com");
    assert.equal(id.emailVerified, false);
  });
  // Without user:email the list is refused: the public address, unverified.
  await withApi({ "/user": user }, async (api) => {
    const id = await identity("github", api);
    assert.equal(id.email, "public@example.com");
    assert.equal(id.emailVerified, false);
  });
});

Deno.test("Discord: email verified by its `verified` flag", async () => {
  const me = {
    id: "80351110224678912",
    username: "nelly",
    global_name: "Nelly",
    avatar: "8342729096ea3675442027381ff50dfe",
    email: "nelly@example.com",
    verified: true,
  };
  await withApi({ "/users/@me": me }, async (api) => {
    assert.deepEqual(await identity("discord", api), {
      issuer: "https://discord.com",
      subject: "80351110224678912",
      email: "nelly@example.com",
      emailVerified: true,
      name: "Nelly",
      avatar:
        "https://cdn.discordapp.com/avatars/80351110224678912/8342729096ea3675442027381ff50dfe.png",
    });
  });
  await withApi({ "/users/@me": { ...me, verified: false } }, async (api) => {
    assert.equal((await identity("discord", api)).emailVerified, false);
  });
  await withApi({}, async (api) => {
    await assert.rejects(
      identity("discord", api),
      /Cannot log in with discord: Discord's user API answered HTTP 404/,
    );
  });
});
