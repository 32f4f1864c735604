/// <reference lib="dom" />
/**
 * Live updates of the records table while an entity is open: the entity's
 * realtime stream (live_stream.ts) feeds its changes, in order, into the
 * page shown (live_apply.ts decides where each goes). Changes that arrive
 * while a page is being fetched wait for it and are applied after it;
 * changes seen before a fetch started are in that fetch and dropped. With
 * a filter or a search, one list request per batch asks which of the
 * changed records match (`(id == … || …) && (filter)`), so rows that do
 * not match are never shown.
 *
 * @module
 */

import { useEffect, useRef, useState } from "preact/hooks";
import { mb } from "../../mb.ts";
import {
  applyChanges,
  type LiveChange,
  type LiveView,
  type Mark,
  type Verdict,
  type Waiting,
  withoutRows,
} from "./live_apply.ts";
import { type LiveState, LiveStream } from "./live_stream.ts";
import {
  combinedFilter,
  defaultSort,
  literal,
  type TableState,
} from "../records_query.ts";
import { type EntitySchema, reloadCounts } from "../../schemas.ts";
import type { RecordPages } from "../use_record_pages.ts";

/** How long a new or changed row stays highlighted. */
const MARK_MS = 4000;
/** How long a deleted row stays (faded) before it is removed. */
const GONE_MS = 1000;
/** Ids per match request (the filter language allows 4096 characters). */
const IDS_PER_CHECK = 40;
/** At most one sidebar count reload per this long. */
const COUNTS_MS = 2000;

/** What the records page shows of live updates. */
export interface LiveRecords {
  /** False for views and entities without API (nothing to follow). */
  enabled: boolean;
  state: LiveState;
  /** Why live updates are off ("" otherwise). */
  why: string;
  /** Rows shown differently for a while. */
  marks: ReadonlyMap<string, Mark>;
  /** Records behind the "N new records — Show" notice. */
  waiting: ReadonlyMap<string, Waiting>;
  /**
   * Shows the waiting records: page 1 when some are there (newest first),
   * else this page again.
   */
  show(): void;
}

/** Which of `ids` match the table's filter and search. */
async function verdicts(
  schema: EntitySchema,
  s: TableState,
  ids: string[],
): Promise<Map<string, Verdict>> {
  const out = new Map<string, Verdict>();
  const filter = combinedFilter(schema, s);
  for (let i = 0; i < ids.length; i += IDS_PER_CHECK) {
    const part = ids.slice(i, i + IDS_PER_CHECK);
    const which = part.map((id) => `id == ${literal(id)}`).join(" || ");
    try {
      const page = await mb.entity(schema.name).list({
        filter: `(${which}) && (${filter})`,
        limit: part.length,
        fields: "id",
      });
      const found = new Set(page.items.map((r) => r.id));
      // A page cut short by the scan budget decides only what it found.
      for (const id of part) {
        out.set(
          id,
          found.has(id) ? "match" : page.has_more ? "unknown" : "nomatch",
        );
      }
    } catch {
      for (const id of part) out.set(id, "unknown");
    }
  }
  return out;
}

/**
 * Follows `schema`'s changes into `pages` under the table state `s`; the
 * records come with the related records of `expand`, as the page has them.
 */
export function useLiveRecords(
  schema: EntitySchema,
  s: TableState,
  pages: RecordPages,
  onGone: (ids: string[]) => void,
  expand = "",
): LiveRecords {
  const enabled = schema.type !== "view" && schema.has_api !== false;
  const [state, setState] = useState<LiveState>("connecting");
  const [why, setWhy] = useState("");
  const [marks, setMarks] = useState<ReadonlyMap<string, Mark>>(new Map());
  const [waiting, setWaiting] = useState<ReadonlyMap<string, Waiting>>(
    new Map(),
  );
  // Latest values for the stream's callbacks (they outlive renders).
  const now = useRef({ schema, s, pages, onGone, waiting, marks });
  now.current = { schema, s, pages, onGone, waiting, marks };
  const run = useRef({
    queue: [] as LiveChange[],
    busy: false,
    timers: new Set<ReturnType<typeof setTimeout>>(),
    /** Sidebar counts: reloaded at most once per COUNTS_MS. */
    counts: "idle" as "idle" | "quiet" | "again",
    /** The fetch the waiting records were counted after. */
    waitingFetch: -1,
    /** The fetch the marks were made after. */
    marksFetch: -1,
  });
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      run.current.timers.delete(t);
      fn();
    }, ms);
    run.current.timers.add(t);
  };
  const putWaiting = (w: ReadonlyMap<string, Waiting>) => {
    now.current.waiting = w;
    setWaiting(w);
  };
  const putMarks = (m: ReadonlyMap<string, Mark>) => {
    now.current.marks = m;
    setMarks(m);
  };
  const unmark = (ids: string[], only: Mark) => {
    const next = new Map(now.current.marks);
    for (const id of ids) if (next.get(id) === only) next.delete(id);
    putMarks(next);
  };
  const removeGone = (ids: string[]) => {
    const live = now.current.pages.live;
    const page = live.current();
    const gone = new Set(
      ids.filter((id) => now.current.marks.get(id) === "gone"),
    );
    if (page) live.replace(withoutRows(page, gone));
    unmark(ids, "gone");
  };
  const recount = () => {
    const r = run.current;
    if (r.counts !== "idle") {
      r.counts = "again";
      return;
    }
    r.counts = "quiet";
    void reloadCounts();
    later(COUNTS_MS, () => {
      const again = r.counts === "again";
      r.counts = "idle";
      if (again) recount();
    });
  };

  const pump = async () => {
    const r = run.current;
    if (r.busy) return;
    r.busy = true;
    try {
      while (r.queue.length > 0 && !now.current.pages.live.fetching()) {
        const batch = r.queue.splice(0);
        const { schema, s, pages } = now.current;
        const fetches = pages.live.fetches();
        const view: LiveView = {
          plain: combinedFilter(schema, s) === "",
          newestFirst: s.sort === "" && defaultSort(schema) !== "",
          size: s.size,
          number: pages.number,
        };
        const asked = view.plain ? new Map<string, Verdict>() : await verdicts(
          schema,
          s,
          [
            ...new Set(
              batch.filter((c) => c.action !== "delete").map((c) => c.id),
            ),
          ],
        );
        // A page fetched since holds these changes already.
        if (now.current.pages.live.fetches() !== fetches) continue;
        const page = now.current.pages.live.current();
        if (!page) continue;
        const gone = new Set(
          [...now.current.marks].filter(([, m]) => m === "gone").map(([id]) =>
            id
          ),
        );
        // A page fetched since the notice was counted shows its records.
        const before = r.waitingFetch === fetches
          ? now.current.waiting
          : new Map<string, Waiting>();
        r.waitingFetch = fetches;
        const out = applyChanges(
          page,
          batch,
          view,
          (id) => asked.get(id) ?? "unknown",
          before,
          gone,
        );
        if (out.page !== page) now.current.pages.live.replace(out.page);
        if (out.total !== 0) now.current.pages.live.adjustTotal(out.total);
        putWaiting(out.waiting);
        if (out.marks.size > 0) {
          const kept = r.marksFetch === fetches ? now.current.marks : [];
          r.marksFetch = fetches;
          putMarks(new Map([...kept, ...out.marks]));
          const by = (m: Mark) =>
            [...out.marks].filter(([, k]) => k === m).map(([id]) => id);
          const faded = by("gone");
          const shown = [...by("new"), ...by("changed")];
          if (faded.length > 0) {
            now.current.onGone(faded);
            later(GONE_MS, () => removeGone(faded));
          }
          if (shown.length > 0) {
            later(MARK_MS, () => {
              unmark(shown, "new");
              unmark(shown, "changed");
            });
          }
        }
        if (batch.some((c) => c.action !== "update")) recount();
      }
    } finally {
      r.busy = false;
    }
  };

  useEffect(() => {
    if (!enabled) return;
    const stream = new LiveStream(schema.name, expand, {
      change(c) {
        if (c.entity !== schema.name) return;
        run.current.queue.push(c);
        void pump();
      },
      reset() {
        run.current.queue = [];
        putWaiting(new Map());
        now.current.pages.reload();
      },
      state(next, reason) {
        setState(next);
        setWhy(reason);
      },
    });
    stream.start();
    const r = run.current;
    return () => {
      stream.stop();
      for (const t of r.timers) clearTimeout(t);
      r.timers.clear();
      r.queue = [];
    };
  }, [schema.name, enabled, expand]);

  // A fetch shows every record so far (the notice and the marks go); what
  // came while it ran is applied after it.
  useEffect(() => {
    const r = run.current, fetches = pages.live.fetches();
    if (r.marksFetch !== fetches && now.current.marks.size > 0) {
      putMarks(new Map());
    }
    if (!pages.loading) void pump();
    else if (r.waitingFetch !== fetches) putWaiting(new Map());
  }, [pages.loading]);

  return {
    enabled,
    state,
    why,
    marks,
    waiting,
    show() {
      const first = [...now.current.waiting.values()].includes("first");
      putWaiting(new Map());
      if (first) now.current.pages.first();
      else now.current.pages.reload();
    },
  };
}
