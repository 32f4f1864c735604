/// <reference lib="dom" />
/**
 * The files tab's pages (file_pages.ts) for a page component: the page
 * shown, a stack of the starts that led to it (Previous pops), reload.
 * Records are read newest first, only those holding a file.
 *
 * @module
 */

import { useEffect, useState } from "preact/hooks";
import { mb, type RecordData } from "../mb.ts";
import {
  type FileField,
  type FileRow,
  type FileStart,
  loadFilePage,
  withFilesFilter,
} from "./file_pages.ts";
import { apiSort } from "../records/records_query.ts";
import type { EntitySchema } from "../schemas.ts";

/** What the files tab shows. */
export interface FilePages {
  /** The files of the page shown (null before the first answer). */
  rows: FileRow[] | null;
  /** The records of the page's files (for a delete's PATCH). */
  records: ReadonlyMap<string, RecordData>;
  loading: boolean;
  error: string;
  /** 1-based page number. */
  number: number;
  hasNext: boolean;
  next(): void;
  prev(): void;
  reload(): void;
}

const FIRST: FileStart = { after: null, skip: 0 };

/** Pages of `size` files of `schema`'s file fields `fields`. */
export function useFilePages(
  schema: EntitySchema,
  fields: readonly FileField[],
  size: number,
): FilePages {
  // The starts belong to one page size: a new size starts at page 1.
  const [nav, setNav] = useState<{ size: number; stack: FileStart[] }>({
    size,
    stack: [FIRST],
  });
  const stack = nav.size === size ? nav.stack : [FIRST];
  const setStack = (next: FileStart[]) => setNav({ size, stack: next });
  const [shown, setShown] = useState<
    {
      rows: FileRow[];
      records: Map<string, RecordData>;
      next: FileStart | null;
      number: number;
    } | null
  >(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const start = stack[stack.length - 1];
  const filter = withFilesFilter(fields);
  const sort = apiSort(schema, { filter: "", q: "", sort: "", size });
  useEffect(() => {
    if (fields.length === 0) return;
    const ctl = new AbortController();
    const records = new Map<string, RecordData>();
    setLoading(true);
    loadFilePage(
      async (after, limit) => {
        const p = await mb.entity(schema.name).list(
          {
            limit,
            sort,
            filter,
            fields: ["id", ...fields.map((f) => f.name)].join(","),
            after: after ?? undefined,
          },
          { signal: ctl.signal },
        );
        for (const r of p.items) records.set(r.id, r);
        return p;
      },
      fields,
      start,
      size,
    ).then((p) => {
      setShown({ ...p, records, number: stack.length });
      setError("");
    }).catch((e) => {
      if (ctl.signal.aborted) return;
      setShown(null);
      setError((e as Error).message);
    }).finally(() => {
      if (!ctl.signal.aborted) setLoading(false);
    });
    return () => ctl.abort();
  }, [schema.name, filter, size, JSON.stringify(start), stack.length, tick]);
  return {
    rows: shown?.rows ?? null,
    records: shown?.records ?? new Map(),
    loading,
    error,
    number: shown?.number ?? stack.length,
    hasNext: !!shown?.next,
    next() {
      if (!loading && shown?.next) setStack([...stack, shown.next]);
    },
    prev() {
      if (!loading && stack.length > 1) setStack(stack.slice(0, -1));
    },
    reload() {
      setTick(tick + 1);
    },
  };
}
