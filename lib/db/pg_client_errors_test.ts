/**
 * Unit tests of `clientError` (lib/db/pg_client.ts): PostgreSQL's error
 * codes a request can meet become clear envelope errors, never a 500.
 */

import assert from "node:assert/strict";
import { MoonbaseError } from "../errors.ts";
import { clientError, TooManyConnectionsError } from "./pg_client.ts";

const cases: [string, string, string, RegExp][] = [
  ["53300", "too many connections", "unavailable", /refuses more connections/],
  ["57014", "statement timeout", "unavailable", /statement timeout/],
  ["42703", "a column gone", "conflict", /schema changed/],
  ["40P01", "a deadlock", "conflict", /concurrent write/],
];

for (const [code, what, kind, message] of cases) {
  Deno.test(`clientError: ${code} (${what}) is a ${kind} error`, () => {
    const err = clientError(Object.assign(new Error(what), { code }));
    assert.ok(err instanceof MoonbaseError, String(err));
    assert.equal(err.code, kind);
    assert.match(err.message, message);
  });
}

Deno.test("clientError: a code it does not know is passed on unchanged", () => {
  const original = Object.assign(new Error("other"), { code: "XX000" });
  assert.equal(clientError(original), original);
});

Deno.test("clientError: too many connections has its own class (a fallback tells it apart)", () => {
  const err = clientError(Object.assign(new Error("full"), { code: "53300" }));
  assert.ok(err instanceof TooManyConnectionsError);
  assert.equal((err as TooManyConnectionsError).headers["retry-after"], "5");
});
