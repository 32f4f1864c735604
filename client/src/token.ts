/**
 * What the client reads of a token: its claims (never verified here: the
 * server does that), for the expiry and which refresh route to use.
 *
 * @module
 */

/** The claims the client reads. */
export interface TokenClaims {
  /** The user's id. */
  sub?: string;
  /** The auth entity (`mb_admins` for admins). */
  entity?: string;
  /** Seconds since the epoch. */
  iat?: number;
  exp?: number;
  /** Set on impersonation tokens, which cannot be refreshed. */
  imp?: string;
}

/**
 * The claims of a JWT, `{}` when it cannot be read.
 *
 * @example
 * ```ts
 * import { claimsOf } from "./token.ts";
 * const body = btoa(JSON.stringify({ exp: 10 })).replace(/=+$/, "");
 * if (claimsOf(`x.${body}.y`).exp !== 10) throw new Error();
 * if (claimsOf("garbage").exp !== undefined) throw new Error();
 * ```
 */
export function claimsOf(token: string): TokenClaims {
  try {
    const part = token.split(".")[1] ?? "";
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims !== null && typeof claims === "object" ? claims : {};
  } catch {
    return {}; // not a JWT: no claims, so never valid
  }
}

/** When a token expires (ms since the epoch), 0 when unknown. */
export function expiresAt(token: string): number {
  const exp = claimsOf(token).exp;
  return typeof exp === "number" ? exp * 1000 : 0;
}

/**
 * Whether two tokens sign in the same principal: the same user (`sub`) of
 * the same auth entity, impersonated by the same admin or by none. A call
 * the server refused is sent again with another tab's token only when
 * this holds: a tab where someone else signed in meanwhile must not run
 * the first user's call as the second.
 *
 * @example
 * ```ts
 * import { samePrincipal } from "./token.ts";
 * const t = (c: object) => `x.${btoa(JSON.stringify(c))}.y`;
 * const ada = { sub: "u1", entity: "users" };
 * if (!samePrincipal(t({ ...ada, n: 1 }), t({ ...ada, n: 2 }))) throw new Error();
 * if (samePrincipal(t(ada), t({ sub: "u2", entity: "users" }))) throw new Error();
 * if (samePrincipal(t(ada), t({ ...ada, imp: "a1" }))) throw new Error();
 * if (samePrincipal("garbage", "garbage")) throw new Error();
 * ```
 */
export function samePrincipal(a: string, b: string): boolean {
  const x = claimsOf(a);
  const y = claimsOf(b);
  return typeof x.sub === "string" && x.sub !== "" &&
    typeof x.entity === "string" && x.entity !== "" &&
    x.sub === y.sub && x.entity === y.entity && x.imp === y.imp;
}
