/**
 * Signing in as a user of an auth entity and the account flows:
 * `mb.auth("users")` (`/api/v1/auth/<entity>/…`). A successful login keeps
 * its token and user in the client's `authStore`.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";
import { awaitRedirect, openPopup } from "./oauth2.ts";
import { seg, type Transport } from "./transport.ts";
import type {
  AuthMethods,
  AuthResult,
  OAuth2Result,
  RecordModel,
} from "./types.ts";

/** A second login's `mfa_id` (the first login's 401 `MoonbaseError.mfaId`). */
export interface SecondFactor {
  mfaId?: string;
}

/** The exchange half of an OAuth2 sign-in (after the provider's redirect). */
export interface OAuth2CodeLogin extends SecondFactor {
  provider: string;
  code: string;
  /** The `code_verifier` of the provider's link in `methods()`. */
  codeVerifier: string;
  /** The same redirect URL `methods()` was asked with. */
  redirectUrl: string;
  /** The `state` the provider sent back (the server checks it too). */
  state?: string;
}

/** The popup sign-in. */
export interface OAuth2PopupLogin extends SecondFactor {
  provider: string;
  /**
   * The app's page the provider sends the popup back to, which calls
   * `completeOAuth2Redirect()` (register it with the provider). Same origin
   * as the app.
   */
  redirectUrl: string;
  signal?: AbortSignal;
}

/** TOTP enrolment of the signed-in user. */
export interface TotpService {
  /** A new secret and its `otpauth://` URI, for the authenticator app. */
  setup(): Promise<{ secret: string; uri: string }>;
  /** Enrols with a current code of the app. */
  confirm(code: string): Promise<void>;
  /** Ends the enrolment (a current code). */
  disable(code: string): Promise<void>;
}

/** Signing in as a user of one auth entity. */
export class AuthService<U = RecordModel> {
  /** The auth entity's name. */
  readonly name: string;
  /** TOTP enrolment (the signed-in user's own token). */
  readonly totp: TotpService;
  readonly #t: Transport;

  /** Made by `Moonbase.auth`. */
  constructor(transport: Transport, name: string) {
    this.#t = transport;
    this.name = name;
    this.totp = {
      setup: () => this.#post("totp/setup", {}, "store"),
      confirm: async (code) => {
        await this.#post("totp/confirm", { code }, "store");
      },
      disable: async (code) => {
        await this.#post("totp/disable", { code }, "store");
      },
    };
  }

  #post<T>(
    route: string,
    body: unknown,
    auth: "store" | "none" | { token: string } = "none",
  ): Promise<T> {
    return this.#t.send<T>(
      "POST",
      `/api/v1/auth/${seg(this.name)}/${route}`,
      { body, auth },
    );
  }

  async #login(route: string, body: Record<string, unknown>) {
    return this.#t.signIn(await this.#post<AuthResult<U>>(route, body));
  }

  /**
   * Signs in with an email (or id) and password. When a second factor is
   * needed it rejects with a 401 whose `mfaId` the second login takes.
   */
  login(
    identity: string,
    password: string,
    options: SecondFactor = {},
  ): Promise<AuthResult<U>> {
    return this.#login("login", {
      identity,
      password,
      ...mfa(options),
    });
  }

  /** A new token for the signed-in user (the old one is revoked). */
  async refresh(): Promise<AuthResult<U>> {
    const token = this.#t.authStore.token;
    try {
      return this.#t.signIn(
        await this.#post<AuthResult<U>>("refresh", {}, { token }),
      );
    } catch (err) {
      if (err instanceof MoonbaseError && err.status === 401) {
        await this.#t.refused(token);
      }
      throw err;
    }
  }

  /** Revokes the token on the server and clears the store (also when the server cannot be reached). */
  async logout(): Promise<void> {
    const token = this.#t.authStore.token;
    if (token === "") return this.#t.authStore.clear();
    // Revoked first, then forgotten: once the store is empty (and the page
    // shows a login form), the token no longer works anywhere.
    try {
      await this.#post("logout", {}, { token });
    } catch (err) {
      // Already ended (401): nothing left to revoke.
      if (!(err instanceof MoonbaseError) || err.status !== 401) throw err;
    } finally {
      this.#t.authStore.clear();
    }
  }

  /** The sign-in methods the entity offers; OAuth2 links carry `redirectUrl`. */
  methods(options: { redirectUrl?: string } = {}): Promise<AuthMethods> {
    return this.#t.send("GET", `/api/v1/auth/${seg(this.name)}/methods`, {
      query: { redirect_url: options.redirectUrl },
      auth: "none",
    });
  }

  /** Mails a sign-in code; answers the `otp_id` for `loginOtp` (for unknown emails too). */
  requestOtp(email: string): Promise<{ otp_id: string }> {
    return this.#post("request-otp", { email });
  }

  /** Signs in with a mailed code. */
  loginOtp(
    otpId: string,
    code: string,
    options: SecondFactor = {},
  ): Promise<AuthResult<U>> {
    return this.#login("login-otp", {
      otp_id: otpId,
      code,
      ...mfa(options),
    });
  }

  /** The second login of a user enrolled in TOTP. */
  loginTotp(mfaId: string, code: string): Promise<AuthResult<U>> {
    return this.#login("login-totp", { mfa_id: mfaId, code });
  }

  /**
   * Signs in with an OAuth2 provider in a popup (a browser; call it from a
   * click): opens the popup, sends it to the provider, waits for the
   * redirect page's `completeOAuth2Redirect()`, checks `state` and
   * exchanges the code.
   */
  async loginOAuth2(options: OAuth2PopupLogin): Promise<OAuth2Result<U>> {
    const popup = openPopup();
    try {
      const methods = await this.methods({ redirectUrl: options.redirectUrl });
      const link = methods.oauth2.providers.find((p) =>
        p.name === options.provider
      );
      if (!link) {
        throw new MoonbaseError(
          400,
          `Cannot sign in with OAuth2: ${this.name} offers no provider ${
            JSON.stringify(options.provider)
          }`,
        );
      }
      popup.location.href = link.auth_url;
      const back = await awaitRedirect(popup, link.state, options.signal);
      return await this.loginOAuth2Code({
        provider: link.name,
        code: back.code,
        codeVerifier: link.code_verifier,
        redirectUrl: options.redirectUrl,
        state: back.state,
        mfaId: options.mfaId,
      });
    } finally {
      if (!popup.closed) popup.close();
    }
  }

  /** The exchange half of an OAuth2 sign-in: the provider's `code` for a token. */
  async loginOAuth2Code(login: OAuth2CodeLogin): Promise<OAuth2Result<U>> {
    return this.#t.signIn(
      await this.#post<OAuth2Result<U>>("login-oauth2", {
        provider: login.provider,
        code: login.code,
        code_verifier: login.codeVerifier,
        redirect_url: login.redirectUrl,
        ...(login.state !== undefined && { state: login.state }),
        ...mfa(login),
      }),
    );
  }

  /** Mails a password reset link (the answer is the same for unknown emails). */
  async requestPasswordReset(email: string): Promise<void> {
    await this.#post("request-password-reset", { email });
  }

  /** Sets a new password with the mailed link's token. */
  async confirmPasswordReset(token: string, password: string): Promise<void> {
    await this.#post("confirm-password-reset", { token, password });
  }

  /** Mails a verification link to an unverified user. */
  async requestVerification(email: string): Promise<void> {
    await this.#post("request-verification", { email });
  }

  /** Verifies the user with the mailed link's token. */
  async confirmVerification(token: string): Promise<void> {
    await this.#post("confirm-verification", { token });
  }

  /** Mails a link to `newEmail` (the signed-in user's own token). */
  async requestEmailChange(newEmail: string): Promise<void> {
    await this.#post("request-email-change", { email: newEmail }, "store");
  }

  /** Moves the account to the new email with the link's token and the current password. */
  async confirmEmailChange(token: string, password: string): Promise<void> {
    await this.#post("confirm-email-change", { token, password });
  }

  /**
   * An admin's token acting as user `id` (it cannot be refreshed; not kept
   * in the store). `duration` in seconds, 60-86 400.
   */
  impersonate(
    id: string,
    options: { duration?: number } = {},
  ): Promise<AuthResult<U>> {
    return this.#post(
      `impersonate/${seg(id)}`,
      { duration: options.duration ?? null },
      "store",
    );
  }
}

function mfa(options: SecondFactor): { mfa_id?: string } {
  return options.mfaId === undefined ? {} : { mfa_id: options.mfaId };
}
