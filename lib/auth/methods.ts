/**
 * `GET /api/v1/auth/<entity>/methods`: the sign-in methods an auth entity
 * offers, from its `auth` object, for a login page to show.
 *
 * @module
 */

import type { Entity } from "../records/entity.ts";
import { authOptions } from "../schema/auth_options.ts";

/** One OAuth2 provider as a login page uses it (fresh state and PKCE values each time). */
export interface ProviderLink {
  name: string;
  display_name: string;
  /** The authorization URL; ends with `redirect_uri=` when `methods` was given none. */
  auth_url: string;
  state: string;
  code_verifier: string;
  code_challenge: string;
  code_challenge_method: string;
}

/** The answer of `methods`. */
export interface AuthMethods {
  password: { enabled: boolean };
  otp: { enabled: boolean };
  mfa: { enabled: boolean };
  totp: { enabled: boolean };
  oauth2: { enabled: boolean; providers: ProviderLink[] };
}

/**
 * Builds the providers' links (authorization URL, state, PKCE). The OAuth2
 * sign-in supplies it; without it the list is empty.
 */
export type ProviderLinks = (entity: Entity) => Promise<ProviderLink[]>;

/** The methods of an auth entity; `links` lists the OAuth2 providers when enabled. */
export async function authMethods(
  entity: Entity,
  links?: ProviderLinks,
): Promise<AuthMethods> {
  const a = authOptions(entity.schema);
  const oauth2 = a.oauth2.enabled;
  return {
    password: { enabled: a.password.enabled },
    otp: { enabled: a.otp.enabled },
    mfa: { enabled: a.mfa.enabled },
    totp: { enabled: a.totp.enabled },
    oauth2: {
      enabled: oauth2,
      providers: oauth2 && links ? await links(entity) : [],
    },
  };
}
