/**
 * The part of a client address that rate limits count by. An IPv4 address
 * counts as itself; an IPv6 address by its /64 network, because one
 * subscriber usually holds a whole /64 and could otherwise rotate through
 * 2^64 addresses to get a fresh allowance for each request.
 *
 * @module
 */

/**
 * The rate-limit key of a client address (`unknown` and other non-addresses
 * are returned as they are).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clientKey } from "moonbase/lib/auth/client_key.ts";
 * assert.equal(clientKey("203.0.113.9"), "203.0.113.9");
 * assert.equal(clientKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
 * assert.equal(clientKey("2001:DB8:1:2:ffff:1:2:3"), "2001:db8:1:2::/64");
 * assert.equal(clientKey("::ffff:198.51.100.7"), "198.51.100.7");
 * assert.equal(clientKey("::1"), "0:0:0:0::/64");
 * ```
 */
export function clientKey(ip: string): string {
  if (!ip.includes(":")) return ip;
  const addr = ip.replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  const mapped = /^(?:0{0,4}:){0,5}(?:0{0,4}:)?ffff:(\d{1,3}(?:\.\d{1,3}){3})$/
    .exec(addr);
  if (mapped) return mapped[1];
  const halves = addr.split("::");
  if (halves.length > 2) return addr;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  if (tail.at(-1)?.includes(".")) tail.splice(-1, 1, "0", "0"); // embedded IPv4
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return addr;
  const groups = [...head, ...Array(missing).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return addr;
  return `${
    groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":")
  }::/64`;
}
