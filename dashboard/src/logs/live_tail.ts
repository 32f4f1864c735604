/// <reference lib="dom" />
/**
 * Live tail for the logs page: while on, asks every 2 s for entries newer
 * than the newest one shown (same filters). The page's own background
 * requests (the polls and the chart's refreshes) carry a request id with
 * this page's tag, so the tail can leave them out instead of showing its
 * own polling as traffic.
 *
 * @module
 */

import { useEffect, useRef } from "preact/hooks";
import { mb, MoonbaseError, type Page } from "../mb.ts";
import type { Query } from "../../../client/mod.ts";
import type { LogFilters } from "./log_filters.tsx";
import type { LogEntry } from "./log_format.tsx";

/** How often the tail polls. */
export const TAIL_MS = 2000;

/** This page load's request-id prefix. */
export const PAGE_TAG = `mbtail-${
  Array.from(crypto.getRandomValues(new Uint8Array(6)))
    .map((b) => b.toString(16).padStart(2, "0")).join("")
}`;
let seq = 0;

/** A GET of `/api/v1<path>` whose request id carries `PAGE_TAG`. */
export async function getTagged<T>(
  path: string,
  query: Query,
  signal?: AbortSignal,
): Promise<T> {
  const data = await mb.send<T>("GET", `/api/v1${path}`, {
    query,
    signal,
    headers: { "x-request-id": `${PAGE_TAG}-${++seq}` },
  });
  // Aborted while the body was read: the caller moved on, say so.
  if (signal?.aborted) {
    throw new DOMException("The request was superseded", "AbortError");
  }
  return data;
}

/** True for an entry of one of this page's own background requests. */
export function isOwn(e: LogEntry): boolean {
  return (e.request_id ?? "").startsWith(PAGE_TAG + "-");
}

/**
 * Polls while `on`: `onNew` gets the entries newer than `newest()` (newest
 * first, the page's own requests left out; possibly none), `onError` a
 * failure in words. Stops when turned off or unmounted.
 */
export function useLiveTail(opts: {
  on: boolean;
  filters: LogFilters;
  newest: () => LogEntry | undefined;
  onNew: (entries: LogEntry[]) => void;
  onError: (message: string) => void;
}): void {
  const ref = useRef(opts);
  ref.current = opts;
  const key = JSON.stringify(opts.filters);
  useEffect(() => {
    if (!opts.on) return;
    const ac = new AbortController();
    const since = new Date().toISOString();
    let busy = false;
    const tick = async () => {
      if (busy) return;
      busy = true;
      try {
        const { filters, newest } = ref.current;
        const top = newest();
        let start = top ? top.time : since;
        if (filters.start_date > start) start = filters.start_date;
        const page = await getTagged<Page<LogEntry>>("/sys/logs", {
          level: filters.level,
          min_level: filters.min_level,
          type: filters.type,
          search: filters.search,
          start_date: start,
          end_date: filters.end_date,
          limit: 200,
        }, ac.signal);
        const fresh = page.items.filter((e) =>
          (!top || e.id > top.id) && !isOwn(e)
        );
        ref.current.onNew(fresh);
      } catch (e) {
        if (e instanceof MoonbaseError) ref.current.onError(e.message);
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(tick, TAIL_MS);
    return () => {
      clearInterval(timer);
      ac.abort();
    };
  }, [opts.on, key]);
}
