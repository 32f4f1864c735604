/**
 * The client's token refresher (client/src/session.ts) on a device whose
 * clock is off: it schedules by the server's time, read from the tokens it
 * gets fresh, so it neither refreshes in a loop nor lets a token expire.
 * No server: the refresh call is a stand-in that issues tokens.
 */

import { assert, assertEquals } from "./_server.ts";
import { MemoryAuthStore } from "../client/src/auth_store.ts";
import { Refresher } from "../client/src/session.ts";
import type { AuthResult } from "../client/src/types.ts";

const LIFE = 3600;

/** An unsigned token as the server issues it at `serverNow` (ms). */
function tokenAt(serverNow: number): string {
  const iat = Math.floor(serverNow / 1000);
  const body = btoa(JSON.stringify({
    sub: "u1",
    entity: "users",
    iat,
    exp: iat + LIFE,
  })).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  return `h.${body}.s`;
}

/** Waits until `ok()` or the deadline (then lets the test's assertion say why). */
async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("client refresh: a clock 58 minutes ahead refreshes once, not in a loop", async () => {
  // The server's clock is 58 minutes behind this device's: each token it
  // issues expires 2 minutes from now by this clock, inside the 5 minutes
  // before expiry in which a token is due.
  const skew = 58 * 60_000;
  const serverNow = () => Date.now() - skew;
  let calls = 0;
  const store = new MemoryAuthStore();
  store.save(tokenAt(serverNow()), { id: "u1" });
  const refresher = new Refresher(
    store,
    (_path, _token): Promise<AuthResult> => {
      calls++;
      return Promise.resolve({
        token: tokenAt(serverNow()),
        user: { id: "u1" },
      } as unknown as AuthResult);
    },
    "test-refresh",
  );
  try {
    // The first token looks due at once: one refresh reads the skew.
    await until(() => calls >= 1);
    assertEquals(calls, 1);
    // Then nothing is due for about 55 minutes: a loop would call again
    // on every turn of the event loop.
    const seen = calls;
    await until(() => calls > seen + 5, 300);
    assert(calls <= seen + 1, `refreshed ${calls} times: a refresh loop`);
    assert(store.isValid, "the token still works");
  } finally {
    refresher.stop();
  }
});
