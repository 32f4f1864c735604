/// <reference lib="dom" />
/**
 * Keyset paging over an entity's records for a page of the dashboard: the
 * current page, a stack of the cursors that led to it (Previous pops),
 * a total fetched on demand, and a filter error told apart from other
 * errors (with its position, from `POST /sys/rules/check` when the server
 * has it, else from the message).
 *
 * @module
 */

import { useEffect, useRef, useState } from "preact/hooks";
import { mb, type MoonbaseError, type Page, type RecordData } from "../mb.ts";
import type { FilterError } from "./filter_bar.tsx";
import { checkExpr } from "../rules/rule_vocabulary.ts";
import {
  combinedFilter,
  errorPosition,
  listQuery,
  type TableState,
} from "./records_query.ts";
import type { EntitySchema } from "../schemas.ts";

/** What a records page shows. */
export interface RecordPages {
  page: Page<RecordData> | null;
  loading: boolean;
  error: string;
  filterError: FilterError | null;
  /** 1-based page number. */
  number: number;
  total: number | null;
  counting: boolean;
  next(): void;
  prev(): void;
  count(): void;
  reload(): void;
  /** Goes back to page 1 (fetched again). */
  first(): void;
  /** Access for live changes (latest values, not the last render's). */
  live: LivePage;
}

/**
 * The page as live changes see it: read and replaced synchronously, so
 * changes arriving between renders never work on a stale copy.
 */
export interface LivePage {
  /** The page shown now. */
  current(): Page<RecordData> | null;
  /** Replaces the page shown (its cursor and `has_more` as given). */
  replace(page: Page<RecordData>): void;
  /** True while a page is being fetched. */
  fetching(): boolean;
  /** How many fetches have started (a change seen before one is in it). */
  fetches(): number;
  /** Moves a known total by `delta`, or forgets it (`null`). */
  adjustTotal(delta: number | null): void;
}

async function explainFilter(
  schema: EntitySchema,
  s: TableState,
  err: MoonbaseError,
): Promise<FilterError> {
  const filter = s.filter.trim();
  try {
    const r = await checkExpr(schema.name, filter, "filter");
    if (!r.valid) {
      return {
        // The position is shown apart, as on the rules page.
        message: r.detail ? `Cannot run this filter: ${r.detail}` : r.error,
        position: r.position,
        end: r.end,
      };
    }
  } catch {
    // no checker on this server (404) or it failed: read the list's message
  }
  let position = errorPosition(err.message);
  // The list got "(filter) && (search)": one character before the filter.
  if (position >= 0 && combinedFilter(schema, s) !== filter) position -= 1;
  return { message: err.message, position, end: position + 1 };
}

/**
 * Pages of `schema`'s records under the table state `s`, with the related
 * records of `expand` (a change fetches the page shown again).
 */
export function useRecordPages(
  schema: EntitySchema | undefined,
  s: TableState,
  expand = "",
): RecordPages {
  const [page, setPageState] = useState<Page<RecordData> | null>(null);
  const latest = useRef<Page<RecordData> | null>(null);
  const inFlight = useRef({ busy: false, started: 0 });
  const setPage = (p: Page<RecordData> | null) => {
    latest.current = p;
    setPageState(p);
  };
  // The number of the page shown (it changes when its records arrive).
  const [shownNumber, setShownNumber] = useState(1);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState("");
  const [filterError, setFilterError] = useState<FilterError | null>(null);
  const [counted, setCounted] = useState<{ key: string; total: number }>();
  const [counting, setCounting] = useState(false);
  const [tick, setTick] = useState(0);
  const stateKey = JSON.stringify([schema?.name, s]);
  // Cursors and the total belong to one query: a new one starts at page 1.
  const [nav, setNav] = useState<{ key: string; stack: (string | null)[] }>(
    { key: stateKey, stack: [null] },
  );
  const stack = nav.key === stateKey ? nav.stack : [null];
  const setStack = (next: (string | null)[]) =>
    setNav({ key: stateKey, stack: next });
  const total = counted?.key === stateKey ? counted.total : null;
  const cursor = stack[stack.length - 1];
  useEffect(() => {
    if (!schema) return;
    const ctl = new AbortController();
    setLoading(true);
    inFlight.current = { busy: true, started: inFlight.current.started + 1 };
    mb.entity(schema.name).list(listQuery(schema, s, cursor, false, expand), {
      signal: ctl.signal,
    }).then((p) => {
      setPage(p);
      setShownNumber(stack.length);
      setError("");
      setFilterError(null);
    }).catch(async (e) => {
      if (ctl.signal.aborted) return;
      const err = e as MoonbaseError;
      setPage(null);
      setShownNumber(stack.length);
      if (err.status === 400 && s.filter.trim()) {
        const fe = await explainFilter(schema, s, err);
        if (!ctl.signal.aborted) {
          setFilterError(fe);
          setError("");
        }
      } else {
        setFilterError(null);
        setError(err.message);
      }
    }).finally(() => {
      if (ctl.signal.aborted) return;
      inFlight.current.busy = false;
      setLoading(false);
    });
    return () => ctl.abort();
  }, [stateKey, cursor, tick, stack.length, expand]);
  return {
    page,
    loading,
    error,
    filterError,
    number: shownNumber,
    total,
    counting,
    next() {
      if (loading) return;
      if (page?.has_more && page.cursor) setStack([...stack, page.cursor]);
    },
    prev() {
      if (!loading && stack.length > 1) setStack(stack.slice(0, -1));
    },
    count() {
      if (!schema) return;
      setCounting(true);
      mb.entity(schema.name).list({
        ...listQuery(schema, s, null, true),
        limit: 1,
        fields: "id",
      }).then((p) =>
        p.total !== undefined && setCounted({ key: stateKey, total: p.total })
      )
        .catch((e) => setError((e as Error).message))
        .finally(() => setCounting(false));
    },
    reload() {
      setTick(tick + 1);
      setCounted(undefined);
    },
    first() {
      setStack([null]);
      setTick(tick + 1);
      setCounted(undefined);
    },
    live: {
      current: () => latest.current,
      replace: setPage,
      fetching: () => inFlight.current.busy,
      fetches: () => inFlight.current.started,
      adjustTotal(delta) {
        if (delta === null) setCounted(undefined);
        else {
          setCounted((c) =>
            c && c.key === stateKey ? { key: c.key, total: c.total + delta } : c
          );
        }
      },
    },
  };
}
