/**
 * The TOTP core against RFC 6238 appendix B (SHA-1, 8 digits, the ASCII
 * secret "12345678901234567890"), RFC 4226 appendix D (HOTP, 6 digits), and
 * the acceptance window and step rule on a fake clock.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  base32Decode,
  base32Encode,
  hotp,
  matchStep,
  stepAt,
  totpAt,
} from "./totp.ts";

const SECRET = new TextEncoder().encode("12345678901234567890");

Deno.test("RFC 6238 test vectors (SHA-1)", () => {
  const vectors: [number, string][] = [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"],
  ];
  for (const [seconds, code] of vectors) {
    assert.equal(totpAt(SECRET, seconds * 1000, 8), code, `T = ${seconds}`);
  }
});

Deno.test("RFC 4226 HOTP test vectors", () => {
  const codes = [
    "755224",
    "287082",
    "359152",
    "969429",
    "338314",
    "254676",
    "287922",
    "162583",
    "399871",
    "520489",
  ];
  codes.forEach((code, counter) => assert.equal(hotp(SECRET, counter), code));
});

Deno.test("base32 round trip (RFC 4648 vectors)", () => {
  const vectors: [string, string][] = [
    ["", ""],
    ["f", "MY"],
    ["fo", "MZXQ"],
    ["foo", "MZXW6"],
    ["foob", "MZXW6YQ"],
    ["fooba", "MZXW6YTB"],
    ["foobar", "MZXW6YTBOI"],
  ];
  for (const [plain, encoded] of vectors) {
    const bytes = new TextEncoder().encode(plain);
    assert.equal(base32Encode(bytes), encoded);
    assert.deepEqual(base32Decode(encoded), bytes);
  }
  const random = crypto.getRandomValues(new Uint8Array(20));
  assert.deepEqual(base32Decode(base32Encode(random)), random);
  assert.equal(base32Decode("ABC!"), undefined);
});

Deno.test("matchStep: ±1 step on a fake clock, each step once", () => {
  // A fake clock: the middle of a step, then moved by whole steps.
  let now = 1_700_000_015_000;
  const clock = () => now;
  const step = stepAt(clock());
  const codeOf = (s: number) => hotp(SECRET, s);
  assert.equal(matchStep(SECRET, codeOf(step), clock()), step);
  assert.equal(matchStep(SECRET, codeOf(step - 1), clock()), step - 1);
  assert.equal(matchStep(SECRET, codeOf(step + 1), clock()), step + 1);
  assert.equal(matchStep(SECRET, codeOf(step - 2), clock()), undefined);
  assert.equal(matchStep(SECRET, codeOf(step + 2), clock()), undefined);
  // A step at or before the last one used is refused, a later one is not.
  assert.equal(matchStep(SECRET, codeOf(step), clock(), step), undefined);
  assert.equal(matchStep(SECRET, codeOf(step - 1), clock(), step), undefined);
  assert.equal(matchStep(SECRET, codeOf(step + 1), clock(), step), step + 1);
  // Thirty seconds later the old current step is the previous one.
  now += 30_000;
  assert.equal(matchStep(SECRET, codeOf(step), clock()), step);
  now += 30_000;
  assert.equal(matchStep(SECRET, codeOf(step), clock()), undefined);
  // Not six digits: no match, no throw.
  for (const bad of ["", "12345", "1234567", "12345a", " 123456"]) {
    assert.equal(matchStep(SECRET, bad, clock()), undefined, bad);
  }
});
