/// <reference lib="dom" />
/**
 * Size and type of stored files, read with `HEAD` requests on the file
 * routes (the admin's token in `Authorization`, so protected files answer
 * too), a few at a time.
 *
 * @module
 */

import { useEffect, useState } from "preact/hooks";
import { fileUrl } from "./file_token.ts";
import { mb } from "../mb.ts";

/** What a HEAD told about a file (`size` -1 when it failed). */
export interface FileMeta {
  size: number;
  type: string;
}

async function head(entity: string, name: string): Promise<FileMeta> {
  try {
    const res = await fetch(fileUrl(entity, name), {
      method: "HEAD",
      headers: { authorization: `Bearer ${mb.authStore.token}` },
    });
    if (!res.ok) return { size: -1, type: `unavailable (${res.status})` };
    return {
      size: Number(res.headers.get("content-length") ?? -1),
      type: res.headers.get("content-type") ?? "",
    };
  } catch {
    // Offline: the table says so for this file and shows the others.
    return { size: -1, type: "unavailable" };
  }
}

/** Meta of `names` (filled in as answers arrive). */
export function useFileMeta(
  entity: string,
  names: string[],
): Record<string, FileMeta> {
  const [meta, setMeta] = useState<Record<string, FileMeta>>({});
  const key = names.join("/");
  useEffect(() => {
    let live = true;
    const queue = [...names];
    const found: Record<string, FileMeta> = {};
    const worker = async () => {
      for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
        found[n] = await head(entity, n);
        if (live) setMeta({ ...found });
      }
    };
    void Promise.all([worker(), worker(), worker(), worker()]);
    return () => {
      live = false;
    };
  }, [entity, key]);
  return meta;
}

/** Bytes in words. */
export function sizeText(n: number): string {
  if (n < 0) return "?";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
