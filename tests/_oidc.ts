/**
 * A real OpenID provider for the tests: npm `oidc-provider` (certified) on
 * a free loopback port, with the clients and accounts a test gives. Its
 * login and consent pages are replaced by one step that signs in the
 * account the authorization URL names in `login_hint` and grants what was
 * asked, so `authorize(authUrl, account)` walks the redirects (with the
 * provider's cookies) like a browser and returns the `code` and `state`
 * the provider sends to the redirect URL.
 *
 * `startMirror` serves a discovery document of its own (another issuer)
 * whose endpoints are the real provider's, and can swap the client of
 * token requests: what a misbehaving issuer looks like (id tokens of
 * another issuer or audience).
 *
 * @module
 */

import Provider from "oidc-provider";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";

/** One RS256 key per test process (key generation is slow-ish). */
let key: Promise<Record<string, unknown>> | undefined;
function signingKey(): Promise<Record<string, unknown>> {
  key ??= (async () => {
    const { privateKey } = await generateKeyPair("RS256", {
      extractable: true,
    });
    return { ...(await exportJWK(privateKey)), kid: "test-1", use: "sig" };
  })();
  return key;
}

/** An account of the provider. */
export interface OidcAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
  picture?: string;
}

/** A client registered at the provider. */
export interface OidcClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  /** Default client_secret_basic. */
  token_endpoint_auth_method?: "client_secret_basic" | "client_secret_post";
}

/** A running provider. */
export interface OidcServer {
  /** The issuer URL (http://127.0.0.1:<port>). */
  readonly issuer: string;
  /** Accounts by id; a test may change them between sign-ins. */
  readonly accounts: Map<string, OidcAccount>;
  /** Signs `account` in at `authUrl` and follows the redirects to the redirect URL. */
  authorize(authUrl: string, account: string): Promise<Authorized>;
  close(): Promise<void>;
}

/** Where the provider sent the browser back. */
export interface Authorized {
  code: string;
  state: string;
  /** The whole URL the provider redirected to. */
  url: URL;
}

/** Options of `startOidc`. */
export interface OidcOptions {
  clients: OidcClient[];
  accounts: Record<string, OidcAccount>;
  /**
   * true (the provider's default): with an access token the id token holds
   * only `sub` and the rest comes from userinfo; false: the id token holds
   * the email and profile claims.
   */
  conformIdTokenClaims?: boolean;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Starts a provider on a free loopback port. */
export async function startOidc(options: OidcOptions): Promise<OidcServer> {
  const accounts = new Map(Object.entries(options.accounts));
  const ref: { provider?: Provider } = {};
  const server = createServer((req, res) => {
    if (!ref.provider) {
      res.statusCode = 503;
      res.end();
      return;
    }
    const p = ref.provider;
    if (req.url?.startsWith("/interaction/")) {
      (async () => {
        const details = await p.interactionDetails(req, res);
        const accountId = String(details.params.login_hint ?? "");
        const grant = new p.Grant({
          accountId,
          clientId: String(details.params.client_id),
        });
        grant.addOIDCScope(String(details.params.scope ?? "openid"));
        const grantId = await grant.save();
        await p.interactionFinished(req, res, {
          login: { accountId },
          consent: { grantId },
        }, { mergeWithLastSubmission: false });
      })().catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    p.callback()(req, res);
  });
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  ref.provider = new Provider(issuer, {
    clients: options.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      redirect_uris: c.redirect_uris,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: c.token_endpoint_auth_method ??
        "client_secret_basic",
    })),
    findAccount(_ctx: unknown, id: string) {
      const a = accounts.get(id);
      if (!a) return undefined;
      return {
        accountId: id,
        claims: () => ({ sub: id, ...accounts.get(id) }),
      };
    },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name", "picture"],
    },
    conformIdTokenClaims: options.conformIdTokenClaims ?? true,
    cookies: { keys: ["moonbase-test-cookie-key"] },
    jwks: { keys: [await signingKey()] },
    ttl: { Interaction: 600, Grant: 600, Session: 600 },
    features: { devInteractions: { enabled: false } },
    interactions: {
      url: (_ctx: unknown, interaction: { uid: string }) =>
        `/interaction/${interaction.uid}`,
    },
    pkce: { required: () => true },
  });
  return {
    issuer,
    accounts,
    authorize: (authUrl, account) => walk(authUrl, account),
    close: () => closeServer(server),
  };
}

/** Follows the provider's redirects like a browser, until the redirect URL. */
async function walk(authUrl: string, account: string): Promise<Authorized> {
  const start = new URL(authUrl);
  start.searchParams.set("login_hint", account);
  const redirect = start.searchParams.get("redirect_uri") ?? "";
  const cookies = new Map<string, string>();
  let url = start.toString();
  for (let hop = 0; hop < 12; hop++) {
    const res = await fetch(url, {
      redirect: "manual",
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair.indexOf("=");
      cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
    }
    const location = res.headers.get("location");
    const text = await res.text();
    if (res.status < 300 || res.status >= 400 || !location) {
      throw new Error(
        `the provider answered ${res.status} at ${url}: ${text.slice(0, 500)}`,
      );
    }
    const next = new URL(location, url);
    if (redirect !== "" && next.toString().startsWith(redirect)) {
      const error = next.searchParams.get("error");
      if (error) {
        throw new Error(
          `the provider refused: ${error} ${
            next.searchParams.get("error_description")
          }`,
        );
      }
      return {
        code: next.searchParams.get("code") ?? "",
        state: next.searchParams.get("state") ?? "",
        url: next,
      };
    }
    url = next.toString();
  }
  throw new Error("the provider redirected too often");
}

/** A misbehaving issuer in front of a real one. */
export interface Mirror {
  /** Its issuer URL (its discovery document names it). */
  readonly issuer: string;
  /** Set: token requests get no answer (until `close`). */
  hang: boolean;
  /** Stops it (again: nothing). */
  close(): Promise<void>;
}

/**
 * Serves a discovery document naming its own URL as the issuer, with the
 * real provider's authorization, jwks and userinfo endpoints; token
 * requests go to the real provider, with the client credentials replaced
 * by `swapClient` when given.
 */
export async function startMirror(
  real: string,
  swapClient?: { id: string; secret: string },
): Promise<Mirror> {
  const doc = await (await fetch(`${real}/.well-known/openid-configuration`))
    .json() as Record<string, unknown>;
  let issuer = "";
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const mirror = { hang: false };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/.well-known/openid-configuration") {
        return Response.json({
          ...doc,
          issuer,
          token_endpoint: `${issuer}/token`,
        });
      }
      if (path === "/token") {
        if (mirror.hang) {
          await held;
          return new Response("stopped", { status: 503 });
        }
        const form = new URLSearchParams(await req.text());
        const headers: Record<string, string> = {
          "content-type": "application/x-www-form-urlencoded",
        };
        if (swapClient) {
          form.delete("client_id");
          form.delete("client_secret");
          headers.authorization = `Basic ${
            btoa(`${swapClient.id}:${swapClient.secret}`)
          }`;
        } else {
          const auth = req.headers.get("authorization");
          if (auth) headers.authorization = auth;
        }
        const res = await fetch(String(doc.token_endpoint), {
          method: "POST",
          headers,
          body: form.toString(),
        });
        return new Response(await res.text(), {
          status: res.status,
          headers: { "content-type": "application/json" },
        });
      }
      return new Response("not found", { status: 404 });
    },
  );
  issuer = `http://127.0.0.1:${server.addr.port}`;
  let closing: Promise<void> | undefined;
  return Object.assign(mirror, {
    issuer,
    close() {
      release();
      closing ??= server.shutdown();
      return closing;
    },
  });
}
