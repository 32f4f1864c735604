/**
 * The bare handlers' token check (bench/floor.ts, floor_pg.ts,
 * inserts_bare.ts): the HS256 signature verified with `MB_JWT_SECRET`, the
 * subject read, verified tokens cached, as Moonbase does, with nothing else
 * (no expiry, revocation or user lookup: those are the bare handler's SQL).
 *
 * @module
 */

/**
 * A function from an `Authorization` header to the subject of its valid
 * bearer token (undefined for none or a bad one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tokenSubject } from "./bare_token.ts";
 * const subject = await tokenSubject("secret");
 * assert.equal(await subject(null), undefined);
 * assert.equal(await subject("Bearer a.b.c"), undefined);
 * ```
 */
export async function tokenSubject(
  secret: string = Deno.env.get("MB_JWT_SECRET") ?? "",
): Promise<(header: string | null) => Promise<string | undefined>> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  const verified = new Map<string, string>();
  const b64url = (s: string) =>
    Uint8Array.from(
      atob(s.replace(/-/g, "+").replace(/_/g, "/")),
      (c) => c.charCodeAt(0),
    );
  return async (header) => {
    const token = /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1];
    if (!token) return undefined;
    const hit = verified.get(token);
    if (hit) return hit;
    try {
      const [h, p, sig] = token.split(".");
      const ok = await crypto.subtle.verify(
        "HMAC",
        key,
        b64url(sig ?? ""),
        new TextEncoder().encode(`${h}.${p}`),
      );
      if (!ok) return undefined;
      const sub = String(JSON.parse(new TextDecoder().decode(b64url(p))).sub);
      verified.set(token, sub);
      return sub;
    } catch {
      return undefined; // a malformed token is refused, as the server refuses it
    }
  };
}
