/// <reference lib="dom" />
/**
 * `/mb/logs`: filters kept in the URL query, the request-rate chart for
 * the filter's dates, the entries in keyset pages (Next follows the
 * cursor, Previous pops a stack of the cursors seen), and a live tail that
 * prepends newer entries every 2 s while it is on.
 *
 * @module
 */

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { MoonbaseError, type Page } from "../mb.ts";
import { query, setQuery } from "../router.ts";
import { ErrorBox } from "../ui/field.tsx";
import {
  FILTER_KEYS,
  filtersOf,
  type LogFilters,
  LogFiltersForm,
} from "./log_filters.tsx";
import type { LogEntry } from "./log_format.tsx";
import { LogTable } from "./log_table.tsx";
import { getTagged, useLiveTail } from "./live_tail.ts";
import { RateChart } from "./rate_chart.tsx";

/** Most rows kept on screen while the tail prepends. */
const MAX_ROWS = 1000;

/** The logs page. */
export function LogsPage(_props: Record<string, never>): JSX.Element {
  const filters = filtersOf(query.value);
  const key = JSON.stringify(filters);
  const limit = Number(filters.limit) || 50;
  // The position: cursors of the pages before this one ("" = the first
  // page) and this page's cursor. New filters start at the first page.
  const [pos, setPos] = useState({ key, stack: [] as string[], after: "" });
  const { stack, after } = pos.key === key
    ? pos
    : { stack: [] as string[], after: "" };
  const go = (s: string[], a: string) => setPos({ key, stack: s, after: a });
  const [page, setPage] = useState<Page<LogEntry> | null>(null);
  const [items, setItems] = useState<LogEntry[]>([]);
  const [error, setError] = useState("");
  const [loading, setLoading] = useState(false);
  const [tail, setTail] = useState(false);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const [announce, setAnnounce] = useState("");
  const [chartTick, setChartTick] = useState(0);
  const itemsRef = useRef(items);
  itemsRef.current = items;

  useEffect(() => {
    const ac = new AbortController();
    setLoading(true);
    // Tagged like the tail's polls: the tail leaves this page's own
    // requests out.
    getTagged<Page<LogEntry>>(
      "/sys/logs",
      { ...filters, limit, after },
      ac.signal,
    ).then((p) => {
      if (ac.signal.aborted) return; // other filters or page since
      setPage(p);
      setItems(p.items);
      setFresh(new Set());
      setError("");
      setLoading(false);
    }).catch((e) => {
      // Anything else is the abort of a page superseded by other filters.
      if (e instanceof MoonbaseError) {
        setError(e.message);
        setLoading(false);
      }
    });
    return () => ac.abort();
  }, [key, after]);

  useLiveTail({
    on: tail,
    filters,
    newest: () => itemsRef.current[0],
    onNew: (entries) => {
      if (entries.length === 0) return;
      setItems([...entries, ...itemsRef.current].slice(0, MAX_ROWS));
      setFresh(new Set(entries.map((e) => e.id)));
      setAnnounce(
        entries.length === 1
          ? "1 new entry"
          : `${
            entries.length >= 200 ? "200 or more" : entries.length
          } new entries`,
      );
      setChartTick((n) => n + 1);
      setError("");
    },
    onError: setError,
  });

  const apply = (f: LogFilters) => {
    const changes: Record<string, string> = {};
    for (const k of FILTER_KEYS) changes[k] = f[k];
    setQuery(changes, true);
  };
  const toggleTail = () => {
    const on = !tail;
    setTail(on);
    setAnnounce(
      on ? "Live tail on: new entries appear at the top" : "Live tail off",
    );
    // The tail adds to the newest entries: go to the first page.
    if (on && after) go([], "");
  };
  const next = () => {
    if (!page?.cursor) return;
    go([...stack, after], page.cursor);
  };
  const prev = () => {
    const s = [...stack];
    const c = s.pop() ?? "";
    go(s, c);
  };

  return (
    <section class="logs-page">
      <div class="page-head row wrap">
        <h1>Logs</h1>
        <span class="spacer" />
        <button
          type="button"
          class={tail ? "btn btn-primary tail-toggle" : "btn tail-toggle"}
          aria-pressed={tail}
          onClick={toggleTail}
        >
          <span class={tail ? "tail-dot on" : "tail-dot"} aria-hidden="true" />
          Live tail
        </button>
      </div>
      <p class="sr-only" role="status" aria-live="polite">{announce}</p>
      <LogFiltersForm key={key} value={filters} onApply={apply} />
      <RateChart
        start={filters.start_date}
        end={filters.end_date}
        refresh={chartTick}
      />
      <ErrorBox error={error} />
      {page && items.length === 0 && !loading && (
        <p class="card empty">
          No log entries match these filters.
        </p>
      )}
      {items.length > 0 && <LogTable items={items} fresh={fresh} />}
      <nav class="pager" aria-label="Log pages">
        <button
          type="button"
          class="btn"
          disabled={stack.length === 0 || loading}
          onClick={prev}
        >
          Previous
        </button>
        <button
          type="button"
          class="btn"
          disabled={!page?.has_more || loading || tail}
          onClick={next}
        >
          Next
        </button>
        <span class="muted" aria-live="polite">
          {loading
            ? "Loading…"
            : page
            ? `Page ${stack.length + 1} · ${items.length} ${
              items.length === 1 ? "entry" : "entries"
            }${tail ? " · live" : ""}`
            : ""}
        </span>
      </nav>
    </section>
  );
}
