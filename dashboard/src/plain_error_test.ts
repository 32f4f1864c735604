import assert from "node:assert/strict";
import { MoonbaseError } from "../../client/mod.ts";
import { plainError } from "./plain_error.ts";

Deno.test("plain errors: the server's words kept, bare statuses worded", () => {
  const what = "GET /api/v1/schemas";
  const server = new MoonbaseError(409, "Cannot delete entity: posts is used", {
    fields: { name: { code: "used", message: "in use" } },
  });
  assert.equal(plainError(server, what), server, "the server's message stays");

  const bare = plainError(
    new MoonbaseError(
      503,
      `Cannot ${what}: the server answered 503 Service Unavailable`,
      { retryAfter: 5 },
    ),
    what,
  ) as MoonbaseError;
  assert.ok(bare instanceof MoonbaseError);
  assert.equal(bare.status, 503);
  assert.equal(bare.message, "The server or its database is unavailable.");
  assert.equal(bare.retryAfter, 5);

  const gone = plainError(
    new MoonbaseError(0, "Cannot reach the server at /api: Failed to fetch"),
    what,
  ) as MoonbaseError;
  assert.equal(gone.message, "Cannot reach the server: check your connection.");

  const aborted = plainError(
    new MoonbaseError(0, "The call was aborted", { isAbort: true }),
    what,
  );
  assert.ok(aborted instanceof DOMException);
  assert.equal(aborted.name, "AbortError");

  const other = new TypeError("a bug");
  assert.equal(plainError(other, what), other);
});
