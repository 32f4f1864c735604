/**
 * Logging in against an auth entity and turning a bearer token into the
 * `auth` value every rule sees: `{id, entity, type, user}`.
 *
 * @module
 */

import { MoonbaseError } from "../errors.ts";
import { type AuthValue, GUEST } from "../caller.ts";
import { isExposed } from "../records/access.ts";
import type { RecordData } from "../records/codec.ts";
import type { Registry } from "../records/registry.ts";
import type { Entity } from "../records/entity.ts";
import { decodeRow } from "../records/codec.ts";
import { SharedReads } from "../records/shared_reads.ts";
import type { Storage } from "../db/storage.ts";
import type { TokenClaims, TokenSigner } from "./jwt.ts";
import { endsToken, type Revocations } from "./revocation.ts";
import { verifyDummy, verifyPassword } from "./password.ts";
import type { ApiKeys } from "./api_keys.ts";
import { apiKeyRefused, isApiKeyHeader } from "./api_key_refusals.ts";
import { assertMayLogIn } from "./verified.ts";

/** A login result: `{token, user}`. */
export interface LoginResult {
  token: string;
  user: RecordData;
}

const BAD_LOGIN = "Cannot log in: invalid identity or password";

/** Issues and checks tokens for auth entities and admins. */
export class Sessions {
  #signer: TokenSigner;
  #registry: Registry;
  #store: Storage;
  #revoked: Revocations;
  #keys: ApiKeys | undefined;
  /** The users behind tokens, read per request (concurrent ones share statements). */
  #users: SharedReads;

  /** Builds the session service (`keys`: API keys are accepted as callers). */
  constructor(
    signer: TokenSigner,
    registry: Registry,
    store: Storage,
    revoked: Revocations,
    keys?: ApiKeys,
  ) {
    this.#signer = signer;
    this.#registry = registry;
    this.#store = store;
    this.#revoked = revoked;
    this.#keys = keys;
    this.#users = new SharedReads(store);
  }

  /** Verifies identity (email or id) and password; one 401 message for every failure. */
  async login(
    entity: Entity,
    body: Record<string, unknown>,
  ): Promise<LoginResult> {
    const { user, gen } = await this.checkPassword(entity, body);
    // Only now that the password matched (`auth.require_verified`).
    assertMayLogIn(entity, user);
    return await this.issueAt(entity, user, gen);
  }

  /**
   * The first half of a password login: the user whose identity (email or
   * id) and password these are, and the password generation the check
   * read (a token issued for it must be of that generation: `issueAt`).
   * One 401 message for every failure.
   */
  async checkPassword(
    entity: Entity,
    body: Record<string, unknown>,
  ): Promise<{ user: RecordData; gen: number }> {
    const { identity, password } = body;
    if (
      typeof identity !== "string" || identity === "" || identity.length > 320
    ) {
      throw new MoonbaseError(
        "invalid",
        "Cannot log in: identity must be a non-empty string",
        {
          fields: {
            identity: { code: "required", message: "Missing identity" },
          },
        },
      );
    }
    if (
      typeof password !== "string" || password === "" || password.length > 1024
    ) {
      throw new MoonbaseError(
        "invalid",
        "Cannot log in: password must be a non-empty string",
        {
          fields: {
            password: { code: "required", message: "Missing password" },
          },
        },
      );
    }
    const row = await entity.rowFromCols(
      identity.includes("@") ? identity.toLowerCase() : identity,
      ["id", "email"],
    );
    const hash = typeof row?.password === "string" ? row.password : undefined;
    const ok = hash
      ? await verifyPassword(password, hash)
      : await verifyDummy(password);
    if (!row || !ok) throw new MoonbaseError("unauthenticated", BAD_LOGIN);
    // The token's generation must not postdate the hash it checked: read
    // it, then see that the hash is still the same (a password change
    // writes the hash, then the generation). If it changed meanwhile, the
    // password just checked may be the old one.
    const id = String(row.id);
    const gen = await this.generation(entity, id);
    if ((await entity.rowFromCols(id, ["id"]))?.password !== hash) {
      throw new MoonbaseError("unauthenticated", BAD_LOGIN);
    }
    return { user: decodeRow(entity.schema, row, this.#store.dialect), gen };
  }

  /** The user's password generation as the database holds it now. */
  async generation(entity: Entity, id: string): Promise<number> {
    return (await this.#revoked.current(entity.name, id))?.gen ?? 0;
  }

  /**
   * The time (ms, database clock) of the user's last password change, or
   * of the last change that ended all their sessions; 0 for none.
   */
  async lastCutoff(entity: Entity, id: string): Promise<number> {
    return (await this.#revoked.current(entity.name, id))?.cutoff ?? 0;
  }

  /**
   * Signs a token for a user in password generation `gen` (read before the
   * credential was checked); 401 when a change this instance already
   * knows of ended it.
   */
  async issueAt(
    entity: Entity,
    user: RecordData,
    gen: number,
  ): Promise<LoginResult> {
    const { token, claims } = await this.#sign(entity, user, gen);
    if (this.#revoked.isRevoked(claims)) {
      throw new MoonbaseError("unauthenticated", BAD_LOGIN);
    }
    return { token, user };
  }

  /**
   * Signs a token for a user record, in the user's current password
   * generation (`ttl`: its lifetime in seconds; `imp`: the impersonating
   * admin's id, which makes it an impersonation token).
   */
  async issue(
    entity: Entity,
    user: RecordData,
    options: { ttl?: number; imp?: string } = {},
  ): Promise<LoginResult> {
    const id = String(user.id);
    const gen = (await this.#revoked.current(entity.name, id))?.gen ?? 0;
    const { token } = await this.#sign(entity, user, gen, options);
    return { token, user };
  }

  #sign(
    entity: Entity,
    user: RecordData,
    gen: number,
    options: { ttl?: number; imp?: string } = {},
  ): Promise<{ token: string; claims: TokenClaims }> {
    return this.#signer.sign(String(user.id), entity.name, {
      gen,
      ...options,
    });
  }

  /** Verifies a bearer header into claims plus the user; throws 401 on anything wrong. */
  async session(
    header: string | null,
    scope?: "file",
  ): Promise<
    { token: string; claims: TokenClaims; entity: Entity; user: RecordData }
  > {
    const m = /^Bearer\s+(\S+)$/i.exec(header ?? "");
    if (!m) {
      throw new MoonbaseError(
        "unauthenticated",
        "Cannot authenticate: expected Authorization: Bearer <token>",
      );
    }
    const claims = await this.#signer.verify(m[1]);
    if (!claims && isApiKeyHeader(header)) {
      // Routes refuse keys before this (routes/key_refusal.ts); a caller
      // reaching here with one wanted a session.
      throw apiKeyRefused("use a session route", "a key is no session");
    }
    if (!claims || this.#revoked.isRevoked(claims)) throw invalidToken();
    // A file token opens files only; an API token also opens files.
    if (claims.scope !== undefined && claims.scope !== scope) {
      throw invalidToken();
    }
    // The token's entity must still exist, be `auth`, and (unless it is the
    // admins' system entity) have its API: switching `has_api` off shuts its
    // users out everywhere, like deleting it.
    const entity = this.#registry.byName(claims.entity);
    const admins = entity?.isSystem === true && entity.type === "auth" &&
      entity.name === claims.entity;
    if (!admins && !isExposed(entity, claims.entity, "auth")) {
      throw invalidToken();
    }
    // Read for every request, never kept: a deleted user is refused at once.
    const user = await this.#users.read(entity, claims.sub);
    if (!user) throw invalidToken();
    return { token: m[1], claims, entity, user };
  }

  /** Resolves the `Authorization` header (absent → guest; bad → 401). */
  async resolve(header: string | null, scope?: "file"): Promise<AuthValue> {
    return (await this.caller(header, scope)).auth;
  }

  /**
   * Like `resolve`, with the token's claims (none for a guest): what a
   * long-lived connection needs to end when its token does.
   */
  async caller(
    header: string | null,
    scope?: "file",
  ): Promise<{ auth: AuthValue; claims: TokenClaims | undefined }> {
    if (header === null || header === "") {
      return { auth: GUEST, claims: undefined };
    }
    // An API key (any route: records, files, realtime) opens what its user may.
    if (this.#keys && isApiKeyHeader(header)) return this.#keys.caller(header);
    const { claims, entity, user } = await this.session(header, scope);
    return {
      auth: {
        id: claims.sub,
        entity: entity.name,
        type: entity.isSystem ? "admin" : "user",
        user,
        session: claims.jti,
      },
      claims,
    };
  }

  /** Issues a short-lived token that only opens files (for `<img src>`). */
  async fileToken(
    auth: AuthValue,
    ttl = 120,
  ): Promise<{ token: string; expires: string }> {
    if (auth.type === "guest") {
      throw new MoonbaseError(
        "unauthenticated",
        "Cannot issue a file token: authentication required",
      );
    }
    // The generation this instance knows (the caller's token passed it, or
    // is the one a change kept); a change not heard of yet ends both alike.
    const { token, claims } = await this.#signer.sign(auth.id, auth.entity, {
      ttl,
      scope: "file",
      gen: this.#revoked.known(auth.entity, auth.id),
    });
    return { token, expires: new Date(claims.exp * 1000).toISOString() };
  }

  /** Revokes the presented token and issues a fresh one for the same user. */
  async refresh(
    header: string | null,
    expected?: Entity,
  ): Promise<LoginResult> {
    const s = await this.session(header);
    if (expected && s.entity.id !== expected.id) throw invalidToken();
    if (s.claims.imp !== undefined) {
      throw new MoonbaseError(
        "forbidden",
        "Cannot refresh: an impersonation token cannot be refreshed; an admin impersonates the user again when it expires",
      );
    }
    // A refresh is a new token: `auth.require_verified`, switched on after
    // the login, holds for it as for a login (the old token lives on to
    // its expiry).
    assertMayLogIn(s.entity, s.user);
    // Spent once: of parallel refreshes (or a racing logout) one wins.
    const first = await this.#revoked.revoke(s.claims);
    this.#signer.forget(s.token);
    if (!first) throw invalidToken();
    // The database's word on the user's password changes: one this
    // instance has not heard of yet may have ended the token (then 401),
    // or kept it (then the new token is of the new generation).
    const cutoff = await this.#revoked.current(s.entity.name, s.claims.sub);
    if (endsToken(cutoff, s.claims)) throw invalidToken();
    const { token, claims } = await this.#sign(
      s.entity,
      s.user,
      cutoff?.gen ?? 0,
    );
    // A change that landed after that read (known here already) ends it too.
    if (this.#revoked.isRevoked(claims)) throw invalidToken();
    return { token, user: s.user };
  }

  /** Revokes the presented token. */
  async logout(header: string | null, expected?: Entity): Promise<void> {
    const s = await this.session(header);
    if (expected && s.entity.id !== expected.id) throw invalidToken();
    const first = await this.#revoked.revoke(s.claims);
    this.#signer.forget(s.token);
    if (!first) throw invalidToken();
  }
}

function invalidToken(): MoonbaseError {
  return new MoonbaseError(
    "unauthenticated",
    "Cannot authenticate: invalid, expired or revoked token",
  );
}
