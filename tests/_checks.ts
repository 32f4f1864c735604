/**
 * Value assertions shared by the black-box suites: they compare JSON forms
 * and quote the response body when a status is wrong.
 *
 * @module
 */

import type { Reply } from "./_server.ts";

/** Fails the current test step. */
export function fail(msg: string): never {
  throw new Error(msg);
}

/** Asserts that two values have the same JSON form. */
export function eq(actual: unknown, expected: unknown, msg: string): void {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) fail(`${msg}: expected ${e}, got ${a}`);
}

/** Asserts the HTTP status (one of `expected`) and that the envelope agrees. */
export function status(
  r: Reply,
  expected: number | number[],
  msg: string,
): void {
  const ok = Array.isArray(expected) ? expected : [expected];
  if (!ok.includes(r.status)) {
    fail(
      `${msg}: expected ${ok.join(" or ")}, got ${r.status}: ${
        r.text.slice(0, 400)
      }`,
    );
  }
  if (r.body && r.body.status !== r.status) {
    fail(`${msg}: envelope status ${r.body.status} != ${r.status}`);
  }
}

/** The error `p` rejects with; fails when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return fail("expected a rejection");
}
