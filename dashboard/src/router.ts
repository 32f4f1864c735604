/// <reference lib="dom" />
/**
 * Client-side routing over the History API: the current location as
 * signals, `navigate()`, and a click handler that turns same-origin `/mb`
 * links into history pushes.
 *
 * @module
 */

import { signal } from "@preact/signals";

/** The current path (e.g. `/mb/entities/posts`). */
export const path = signal(location.pathname);
/** The current query string's parameters. */
export const query = signal(new URLSearchParams(location.search));

function sync(): void {
  path.value = location.pathname;
  query.value = new URLSearchParams(location.search);
}

addEventListener("popstate", sync);

/** Goes to an `/mb` URL (a path with an optional query). */
export function navigate(href: string, replace = false): void {
  if (href === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  sync();
  scrollTo(0, 0);
}

/** Replaces some query parameters of the current page (no new history entry). */
export function setQuery(
  changes: Record<string, string | undefined>,
  push = false,
): void {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === "") q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  navigate(location.pathname + (s ? "?" + s : ""), !push);
}

/** The current page as a `next=` value for the login form. */
export function here(): string {
  return location.pathname + location.search;
}

/**
 * Matches `pattern` (`/mb/entities/:name`) against `p`; returns the decoded
 * params or null.
 */
export function match(
  pattern: string,
  p: string,
): Record<string, string> | null {
  const a = pattern.split("/").filter(Boolean);
  const b = p.split("/").filter(Boolean);
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(":")) {
      try {
        out[a[i].slice(1)] = decodeURIComponent(b[i]);
      } catch {
        return null; // a malformed %-escape matches no route: "Not found"
      }
    } else if (a[i] !== b[i]) return null;
  }
  return out;
}

/** Intercepts clicks on in-app links (plain left clicks only). */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0) return;
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element).closest("a");
    if (!a || a.target || a.hasAttribute("download")) return;
    if (a.getAttribute("href")?.startsWith("#")) return; // in-page anchor
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith("/mb")) {
      return;
    }
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}

/** An `/mb` link to an entity page. */
export function entityHref(name: string, tab = ""): string {
  return `/mb/entities/${encodeURIComponent(name)}${tab ? "/" + tab : ""}`;
}
