/**
 * Fixtures of the client suites (`tests/client_*_test.ts`): clients of
 * `@moonbase/client` (client/mod.ts) on a test server, each request from a
 * fresh client address (the servers run with `trustProxy`, so no suite
 * trips a per-address limit), and the example app's entities.
 *
 * @module
 */

import {
  Moonbase,
  MoonbaseError,
  type MoonbaseOptions,
} from "../client/mod.ts";
import type { Schema } from "../examples/client_app/schema.ts";
import { ENTITIES } from "../examples/client_app/schema.ts";
import { fixtureAdmin, nextIp } from "./_auth_fixtures.ts";
import type { TestServer } from "./_server.ts";

/** A `fetch` that sends each request from a fresh address (`X-Forwarded-For`). */
export const freshAddressFetch: typeof fetch = (
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> => {
  const headers = new Headers(init.headers);
  headers.set("x-forwarded-for", nextIp());
  return fetch(input, { ...init, headers });
};

/** A client of `s` (or of a server at `s.url`) typed by the example app's schema. */
export function clientOf(
  s: Pick<TestServer, "url">,
  options: MoonbaseOptions = {},
): Moonbase<Schema> {
  return new Moonbase<Schema>(s.url, { fetch: freshAddressFetch, ...options });
}

/** The same client, for entities outside the example's schema. */
export function untyped(mb: Moonbase<Schema>): Moonbase {
  return mb as unknown as Moonbase;
}

/** A client of `s` signed in as the harness admin (token issued directly). */
export async function adminClient(
  s: TestServer,
  options: MoonbaseOptions = {},
): Promise<Moonbase<Schema>> {
  const token = await fixtureAdmin(s);
  const mb = clientOf(s, options);
  mb.authStore.save(token, { id: "admin", email: "admin@example.com" });
  return mb;
}

/** Creates the example app's entities (`users`, `posts`) through the client. */
export async function exampleEntities(s: TestServer): Promise<void> {
  const mb = await adminClient(s);
  try {
    for (const schema of ENTITIES) await mb.schemas.create(schema);
  } finally {
    mb.close();
  }
}

/** Awaits `fn`, which must reject with a `MoonbaseError`; returns it. */
export async function rejection(
  fn: () => Promise<unknown>,
): Promise<MoonbaseError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof MoonbaseError) return err;
    throw new Error(`expected a MoonbaseError, got ${err}`);
  }
  throw new Error("expected a rejection, got a success");
}
