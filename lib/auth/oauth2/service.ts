/**
 * OAuth2 / OpenID Connect sign-in of an app: the providers' links for
 * `GET /api/v1/auth/<entity>/methods` and `POST …/login-oauth2`. One per
 * app (lib/core.ts), holding the caches of discovery documents and key
 * sets and the key that seals code verifiers.
 *
 * A sign-in, in order: the body is checked (400); the provider must be one
 * of the entity's (400); the code verifier must be one this server made for
 * this entity, provider and redirect URL within the last 10 minutes, and a
 * `state` sent along must be its state (401); the provider is resolved
 * (502 when its issuer fails); the verifier is spent, once (401 for a
 * replay); the code is exchanged (401 when the provider refuses it, 502
 * when it fails or is slow); the identity is read and the id token verified
 * (401); then the user is found, linked or created (lib/auth/oauth2/
 * account.ts).
 *
 * @module
 */

import { invalidFields, MoonbaseError } from "../../errors.ts";
import type { Storage } from "../../db/storage.ts";
import type { Entity } from "../../records/entity.ts";
import { type SignedIn, signedInUser } from "./account.ts";
import { ProviderResolver } from "./discovery.ts";
import { exchangeCode, refusedLogin } from "./exchange.ts";
import { FETCH_LIMITS, type FetchLimits } from "./fetch.ts";
import { FlowSeal, type OpenedFlow, sameText } from "./flow.ts";
import { identityOf } from "./identity.ts";
import { KeySets } from "./id_token.ts";
import type { OidcPreset } from "./presets.ts";
import { spendFlow } from "./spent.ts";
import type { ProviderLink } from "../methods.ts";
import type {
  Endpoints,
  OAuth2Options,
  PresetName,
  ProviderConfig,
} from "./types.ts";

/** Bounds and endpoints tests change (`AppConfig.oauth2`). */
export interface OAuth2Tuning {
  /** Outbound bounds (default 5 s, 256 KiB). */
  limits?: Partial<FetchLimits>;
  /** Preset endpoints replaced (tests point GitHub and Discord at a local server). */
  presets?: Partial<Record<PresetName, OidcPreset | Endpoints>>;
}

/** What the app hands the service. */
export interface OAuth2Deps extends OAuth2Tuning {
  store: Storage;
  /** The server's secret (the verifiers' sealing key is derived from it). */
  secret: string;
  /** Milliseconds since the epoch (the database's clock). */
  now: () => number;
  /** Reports a provider left out of `methods` (its issuer failed). */
  warn: (message: string, data: Record<string, unknown>) => void;
}

/** The body of `login-oauth2`. */
export interface OAuth2Login {
  provider: string;
  code: string;
  code_verifier: string;
  redirect_url: string;
  /** Optional: the `state` the provider sent back; checked when given. */
  state?: string;
}

/** OAuth2 sign-in for one app. */
export class OAuth2 {
  #deps: OAuth2Deps;
  #seal: FlowSeal;
  #limits: FetchLimits;
  #resolver: ProviderResolver;
  #keySets: KeySets;

  /** Builds the service. */
  constructor(deps: OAuth2Deps) {
    this.#deps = deps;
    this.#seal = new FlowSeal(deps.secret);
    this.#limits = { ...FETCH_LIMITS, ...deps.limits };
    this.#resolver = new ProviderResolver(this.#limits, deps.presets);
    this.#keySets = new KeySets(this.#limits);
  }

  /** The resolver (an administrator's check of an issuer uses it). */
  get resolver(): ProviderResolver {
    return this.#resolver;
  }

  /**
   * Fresh links for every provider of `options` (none when OAuth2 is
   * off). A provider whose issuer fails is left out and reported, so one
   * broken provider does not take the login page down. `redirect` ("" for
   * none) goes into the URL and binds the verifier.
   */
  async links(
    entity: Entity,
    options: OAuth2Options,
    redirect = "",
  ): Promise<ProviderLink[]> {
    if (!options.enabled) return [];
    if (redirect !== "" && !isRedirectUrl(redirect)) {
      throw invalidFields({
        redirect_url: {
          code: "invalid_url",
          message: "Must be an absolute URL of at most 2000 characters",
        },
      }, "Cannot list sign-in methods: invalid redirect_url");
    }
    const all = await Promise.all(options.providers.map(async (p) => {
      try {
        return this.#link(entity, p, await this.#resolver.resolve(p), redirect);
      } catch (err) {
        this.#deps.warn("OAuth2 provider left out of methods", {
          entity: entity.name,
          provider: p.name,
          error: err instanceof Error ? err.message : String(err),
        });
        return undefined;
      }
    }));
    return all.filter((l): l is ProviderLink => l !== undefined);
  }

  #link(
    entity: Entity,
    config: ProviderConfig,
    endpoints: Endpoints,
    redirect: string,
  ): ProviderLink {
    const flow = this.#seal.issue(
      { entityId: entity.id, provider: config.name, redirect },
      this.#deps.now(),
    );
    const url = new URL(endpoints.authorization);
    const q = url.searchParams;
    q.set("response_type", "code");
    q.set("client_id", config.client_id);
    const scopes = config.scopes.length > 0
      ? config.scopes
      : endpoints.defaultScopes;
    q.set("scope", scopes.join(" "));
    q.set("state", flow.state);
    q.set("code_challenge", flow.code_challenge);
    q.set("code_challenge_method", flow.code_challenge_method);
    if (endpoints.kind === "oidc") q.set("nonce", flow.nonce);
    for (const [k, v] of Object.entries(endpoints.authParams ?? {})) {
      q.set(k, v);
    }
    // Last, so a client without a redirect URL here appends its own.
    q.delete("redirect_uri");
    q.append("redirect_uri", redirect);
    return {
      name: config.name,
      display_name: config.display_name || config.name,
      auth_url: url.toString(),
      state: flow.state,
      code_verifier: flow.code_verifier,
      code_challenge: flow.code_challenge,
      code_challenge_method: flow.code_challenge_method,
    };
  }

  /** Signs in with a code (see the module's order of checks). */
  async login(
    entity: Entity,
    options: OAuth2Options,
    body: Record<string, unknown>,
  ): Promise<SignedIn> {
    if (!options.enabled) {
      throw new MoonbaseError(
        "forbidden",
        `Cannot log in with OAuth2: ${entity.name} does not offer it (auth.oauth2.enabled is false)`,
      );
    }
    const input = checkBody(body);
    const config = options.providers.find((p) => p.name === input.provider);
    if (!config) {
      throw invalidFields({
        provider: {
          code: "unknown_provider",
          message: `Must name a provider of ${entity.name}: ${
            options.providers.map((p) => p.name).join(", ") || "(none)"
          }`,
        },
      }, "Cannot log in with OAuth2: no such provider");
    }
    const flow = this.#open(entity, input);
    const endpoints = await this.#resolver.resolve(config);
    const now = this.#deps.now();
    if (
      !(await spendFlow(this.#deps.store, flow.id, flow.expires, now / 1000))
    ) {
      throw refusedLogin(
        config.name,
        "this sign-in (its code_verifier) was already used",
      );
    }
    const tokens = await exchangeCode(endpoints, config, {
      code: input.code,
      redirectUrl: input.redirect_url,
      codeVerifier: input.code_verifier,
    }, this.#limits);
    const identity = await identityOf(tokens, {
      config,
      endpoints,
      nonce: flow.nonce,
      now,
      keySets: this.#keySets,
      limits: this.#limits,
    });
    return await signedInUser(identity, {
      store: this.#deps.store,
      entity,
      provider: config.name,
      options,
      nowS: Math.floor(this.#deps.now() / 1000),
    });
  }

  #open(entity: Entity, input: OAuth2Login): OpenedFlow {
    const now = this.#deps.now();
    const bound = { entityId: entity.id, provider: input.provider };
    // Made for this redirect URL, or by a `methods` call that named none.
    const flow = this.#seal.open(input.code_verifier, {
      ...bound,
      redirect: input.redirect_url,
    }, now) ??
      this.#seal.open(input.code_verifier, { ...bound, redirect: "" }, now);
    if (!flow) {
      throw refusedLogin(
        input.provider,
        "the code_verifier was not issued by this server for this provider and redirect_url, or is older than 10 minutes",
      );
    }
    if (input.state !== undefined && !sameText(input.state, flow.state)) {
      throw refusedLogin(
        input.provider,
        "the state is not the one of this sign-in",
      );
    }
    return flow;
  }
}

/** An absolute URL (an app's own scheme too), at most 2000 characters. */
function isRedirectUrl(v: string): boolean {
  return v.length <= 2000 && /^[a-z][a-z0-9+.-]*:\S+$/i.test(v);
}

function checkBody(body: Record<string, unknown>): OAuth2Login {
  const fields: Record<string, { code: string; message: string }> = {};
  const text = (key: string, max: number, min = 1): string => {
    const v = body[key];
    if (typeof v !== "string" || v.length < min || v.length > max) {
      fields[key] = {
        code: v === undefined || v === "" ? "required" : "invalid",
        message: `Must be a string of ${min}-${max} characters`,
      };
      return "";
    }
    return v;
  };
  const provider = text("provider", 64);
  const code = text("code", 4096);
  const code_verifier = text("code_verifier", 128, 43);
  const redirect_url = text("redirect_url", 2000);
  if (!fields.redirect_url && !isRedirectUrl(redirect_url)) {
    fields.redirect_url = {
      code: "invalid_url",
      message: "Must be the absolute URL the provider redirected to",
    };
  }
  let state: string | undefined;
  if (body.state !== undefined) state = text("state", 512);
  if (Object.keys(fields).length > 0) {
    throw invalidFields(fields, "Cannot log in with OAuth2: invalid body");
  }
  return { provider, code, code_verifier, redirect_url, state };
}
