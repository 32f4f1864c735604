/**
 * Outbound HTTP to identity providers, bounded: every request (discovery,
 * keys, token exchange, user APIs) ends within a time limit and reads at
 * most a size limit of body. A provider that is down, slow, or answers
 * something that is not JSON becomes a 502 (`bad_gateway`) that names the
 * provider and what failed, never a hang or a 500.
 *
 * @module
 */

import { MoonbaseError } from "../../errors.ts";

/** The bounds of one request to a provider. */
export interface FetchLimits {
  /** Milliseconds the whole request (connect, headers, body) may take. */
  timeoutMs: number;
  /** Most bytes of response body read. */
  maxBytes: number;
}

/** Default bounds: 5 s, 256 KiB (discovery documents and key sets are a few KiB). */
export const FETCH_LIMITS: FetchLimits = {
  timeoutMs: 5_000,
  maxBytes: 262_144,
};

/** A provider's JSON answer with its status (error answers are JSON too). */
export interface JsonAnswer {
  status: number;
  body: unknown;
}

const FAILED_HINT =
  "; try again later, or ask the administrator to check the provider's settings";

/** The 502 for a provider that failed. */
export function providerFailed(
  provider: string,
  reason: string,
): MoonbaseError {
  return new MoonbaseError(
    "bad_gateway",
    `Cannot log in with ${provider}: ${reason}${FAILED_HINT}`,
  );
}

/**
 * The reason of a `providerFailed(provider, …)` error (what failed, without
 * the login's wording), or undefined for any other error.
 */
export function failureReason(
  err: unknown,
  provider: string,
): string | undefined {
  const head = `Cannot log in with ${provider}: `;
  if (
    !(err instanceof MoonbaseError) || err.code !== "bad_gateway" ||
    !err.message.startsWith(head) || !err.message.endsWith(FAILED_HINT)
  ) return undefined;
  return err.message.slice(head.length, -FAILED_HINT.length);
}

/**
 * Fetches `url` and parses its body as JSON, within `limits`. Any status is
 * returned (the caller decides); no answer in time, a body past the size
 * limit, or a body that is not JSON throws a 502 naming `provider` and
 * `what` was asked for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fetchJson } from "moonbase/lib/auth/oauth2/fetch.ts";
 * const server = Deno.serve({ port: 0, onListen() {} }, () => Response.json({ ok: 1 }));
 * const url = `http://127.0.0.1:${server.addr.port}/`;
 * assert.deepEqual(await fetchJson(url, {}, "test", "a document"), { status: 200, body: { ok: 1 } });
 * await server.shutdown();
 * ```
 */
export async function fetchJson(
  url: string,
  init: RequestInit,
  provider: string,
  what: string,
  limits: FetchLimits = FETCH_LIMITS,
): Promise<JsonAnswer> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const seconds = `${Math.round(limits.timeoutMs / 100) / 10} s`;
  let res: Response;
  try {
    res = await fetch(url, {
      ...init,
      signal,
      redirect: "error",
      headers: { accept: "application/json", ...init.headers },
    });
  } catch (err) {
    throw providerFailed(
      provider,
      signal.aborted
        ? `${what} did not answer within ${seconds}`
        : `${what} could not be reached (${errorText(err)})`,
    );
  }
  let text: string;
  try {
    text = await readBounded(res, limits.maxBytes);
  } catch (err) {
    throw providerFailed(
      provider,
      signal.aborted
        ? `${what} did not answer within ${seconds}`
        : err instanceof TooLarge
        ? `${what} answered more than ${limits.maxBytes} bytes`
        : `${what} broke off its answer (${errorText(err)})`,
    );
  }
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    throw providerFailed(
      provider,
      `${what} answered HTTP ${res.status} without JSON`,
    );
  }
}

class TooLarge extends Error {}

async function readBounded(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > max) {
    await res.body?.cancel();
    throw new TooLarge();
  }
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new TooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // Deno's messages may be long (os error detail): one line is enough.
  return text.split("\n")[0].slice(0, 200);
}
