/**
 * The browser half of an OAuth2 sign-in in a popup: the popup goes to the
 * provider, which sends it back to the app's redirect page; that page
 * calls `completeOAuth2Redirect()`, which hands `code` and `state` to the
 * window that opened it (through `postMessage` and a `BroadcastChannel`,
 * same origin only) and closes itself.
 *
 * @module
 */

import { MoonbaseError } from "./errors.ts";

/** What the redirect page hands back. */
export interface OAuth2Redirect {
  code: string;
  state: string;
  /** The provider's error (`access_denied`, …), when it refused. */
  error?: string;
}

/** The name of the channel and of the messages. */
export const OAUTH2_CHANNEL = "moonbase-oauth2";

/** The parts of `window` this module uses (typed here: no DOM types needed). */
interface PopupWindow {
  closed: boolean;
  location: { href: string };
  close(): void;
}

interface WindowLike {
  location: { search: string; hash: string; origin: string };
  opener?: { postMessage(message: unknown, origin: string): void } | null;
  open(url: string, target: string, features: string): PopupWindow | null;
  addEventListener(
    type: "message",
    cb: (e: { origin: string; data: unknown }) => void,
  ): void;
  removeEventListener(
    type: "message",
    cb: (e: { origin: string; data: unknown }) => void,
  ): void;
  close(): void;
}

function browserWindow(action: string): WindowLike {
  const w = globalThis as unknown as Partial<WindowLike>;
  if (typeof w.open !== "function" || !w.location) {
    throw new MoonbaseError(
      0,
      `Cannot ${action}: this needs a browser window; elsewhere, use methods() and loginOAuth2Code()`,
    );
  }
  return w as WindowLike;
}

/**
 * Opens the popup at once (before any await, so a click's user
 * activation still allows it); `url` is set later.
 */
export function openPopup(): PopupWindow {
  const w = browserWindow("sign in with OAuth2");
  const width = 520;
  const height = 640;
  const popup = w.open(
    "about:blank",
    "moonbase-oauth2",
    `popup=yes,width=${width},height=${height}`,
  );
  if (!popup) {
    throw new MoonbaseError(
      0,
      "Cannot sign in with OAuth2: the browser blocked the popup; call loginOAuth2 from a click",
    );
  }
  return popup;
}

/**
 * Waits for the redirect page to hand back the `code` of `state`; rejects
 * when the popup is closed first, the provider refused, or `signal` aborts.
 */
export function awaitRedirect(
  popup: PopupWindow,
  state: string,
  signal?: AbortSignal,
): Promise<OAuth2Redirect> {
  const w = browserWindow("sign in with OAuth2");
  return new Promise((resolve, reject) => {
    const channel = typeof BroadcastChannel === "function"
      ? new BroadcastChannel(OAUTH2_CHANNEL)
      : undefined;
    const done = (err: MoonbaseError | undefined, r?: OAuth2Redirect) => {
      clearInterval(timer);
      w.removeEventListener("message", onMessage);
      channel?.close();
      signal?.removeEventListener("abort", onAbort);
      if (!popup.closed) popup.close();
      if (err) reject(err);
      else resolve(r!);
    };
    const take = (data: unknown) => {
      const m = data as { type?: unknown; redirect?: OAuth2Redirect } | null;
      if (m?.type !== OAUTH2_CHANNEL || m.redirect?.state !== state) return;
      if (m.redirect.error) {
        done(
          new MoonbaseError(
            0,
            `Cannot sign in with OAuth2: the provider answered ${m.redirect.error}`,
          ),
        );
      } else done(undefined, m.redirect);
    };
    const onMessage = (e: { origin: string; data: unknown }) => {
      if (e.origin === w.location.origin) take(e.data);
    };
    const onAbort = () =>
      done(new MoonbaseError(0, "The call was aborted", { isAbort: true }));
    w.addEventListener("message", onMessage);
    if (channel) channel.onmessage = (e) => take(e.data);
    signal?.addEventListener("abort", onAbort);
    const timer = setInterval(() => {
      if (popup.closed) {
        done(
          new MoonbaseError(
            0,
            "Cannot sign in with OAuth2: the window was closed before the sign-in ended",
          ),
        );
      }
    }, 500);
  });
}

/**
 * The redirect page's part: reads `code` and `state` (or `error`) from the
 * page's URL, hands them to the window that opened the popup, and closes
 * the popup. Returns what it handed over (undefined when the URL has no
 * `state`).
 *
 * ```ts ignore
 * // oauth2-redirect.html
 * import { completeOAuth2Redirect } from "@moonbase/client";
 * completeOAuth2Redirect();
 * ```
 */
export function completeOAuth2Redirect(): OAuth2Redirect | undefined {
  const w = browserWindow("complete the OAuth2 sign-in");
  const params = new URLSearchParams(w.location.search);
  if (!params.has("state") && w.location.hash.length > 1) {
    for (const [k, v] of new URLSearchParams(w.location.hash.slice(1))) {
      params.set(k, v);
    }
  }
  const state = params.get("state");
  if (state === null) return undefined;
  const redirect: OAuth2Redirect = {
    code: params.get("code") ?? "",
    state,
    ...(params.has("error") && { error: params.get("error") ?? "" }),
  };
  const message = { type: OAUTH2_CHANNEL, redirect };
  try {
    w.opener?.postMessage(message, w.location.origin);
  } catch {
    // The opener went to another origin: the channel below still reaches it.
  }
  if (typeof BroadcastChannel === "function") {
    const channel = new BroadcastChannel(OAUTH2_CHANNEL);
    channel.postMessage(message);
    channel.close();
  }
  w.close();
  return redirect;
}
